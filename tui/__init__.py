"""Textual monitor for spade-async runs; reads the run database, never writes it."""
