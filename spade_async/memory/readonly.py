"""A synchronous, read-only connection to a run database (for the TUI, scripts and tests).

Why separate from the async store: the TUI and tests read while a run writes, often from a
different process, and must never write or migrate. ``mode=ro`` makes SQLite refuse writes
at the file level; in WAL mode such a reader sees the last committed state and never blocks
the writer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

BUSY_TIMEOUT_MS = 10_000
"""Wait this long for a lock (e.g. a WAL checkpoint) before 'database is locked'."""


def open_readonly(path: str | Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """Open ``path`` read-only; rows are ``sqlite3.Row`` (index or column name).

    Raises ``FileNotFoundError`` when there is no database at ``path`` (``mode=ro`` never
    creates one).
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no run database here")
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=check_same_thread)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def open_for_polling(path: str | Path) -> sqlite3.Connection:
    """Open ``path`` read-only for polling from worker threads (the TUI); ``FileNotFoundError``
    if absent.

    On top of ``mode=ro``: autocommit, so no implicit transaction stays open between polls (an
    open read transaction would pin the WAL and stop checkpoints), and ``query_only`` as a
    second guard against writes.
    """
    conn = open_readonly(path, check_same_thread=False)
    conn.isolation_level = None  # autocommit: never an implicit BEGIN left open
    conn.execute("PRAGMA query_only = ON")
    return conn
