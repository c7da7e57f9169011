"""Click command groups of the ``spade-async`` CLI, one module per group."""
