"""Read-only access to a run's SQLite database, tuned for polling.

Why a separate read connection: the TUI may watch a run owned by another process (or by
this one), and it must never take SQLite's write lock or slow the trainer's single writer.
``spade_async.memory.readonly`` opens the file with ``mode=ro`` (in WAL mode such a reader
sees the last committed state without blocking the writer); on top of it the TUI uses
autocommit, so no implicit transaction stays open between polls (an open read transaction
would pin the WAL and stop checkpoints), and ``query_only`` as a second guard.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from spade_async.memory.readonly import open_readonly

DB_FILENAME = "run.sqlite"  # as spade_async.run.assemble.DB_NAME (not imported: it pulls in torch)


def open_for_polling(path: Path) -> sqlite3.Connection:
    """Open ``path`` read-only for use from worker threads; ``FileNotFoundError`` if absent."""
    conn = open_readonly(path, check_same_thread=False)
    conn.isolation_level = None  # autocommit: never an implicit BEGIN left open
    conn.execute("PRAGMA query_only = ON")
    return conn
