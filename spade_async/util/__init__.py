"""Leaf utilities every layer may use: step numbering, terminal-safe text, quiet output,
crash points for tests, and the one error base. Imports nothing else of the package."""
