"""The ``spade-async`` command line: one module per command group, the top-level group in
:mod:`spade_async.cli.app`."""

from spade_async.cli.app import cli, main

__all__ = ["cli", "main"]
