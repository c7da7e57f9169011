"""Read-only access to a run's SQLite database, tuned for polling.

Why a separate read connection: the TUI may watch a run owned by another process (or by
this one), and it must never take SQLite's write lock or slow the trainer's single writer.
``spade_async.memory.readonly.open_for_polling`` opens the file with ``mode=ro`` (in WAL mode
such a reader sees the last committed state without blocking the writer), in autocommit, so
no implicit transaction stays open between polls (an open read transaction would pin the WAL
and stop checkpoints), and with ``query_only`` as a second guard. Every query the TUI runs is
a function of ``spade_async.memory.queries``: no SQL is written outside the memory layer.
"""

from __future__ import annotations

from spade_async.memory.readonly import open_for_polling
from spade_async.util.steps import DB_NAME

__all__ = ["DB_FILENAME", "open_for_polling"]

DB_FILENAME = DB_NAME  # the one spelling: spade_async.util.steps (imports nothing heavy)
