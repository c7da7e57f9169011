"""The SPADE TUI's panels, one module each."""
