"""A synchronous, read-only connection to a run database (for the TUI, scripts and tests).

Why separate from the async store: the TUI and tests read while a run writes, often from a
different process, and must never write or migrate. ``mode=ro`` makes SQLite refuse writes
at the file level; in WAL mode such a reader sees the last committed state and never blocks
the writer.

A run folder the reader cannot write (a copy on read-only media, another user's run) cannot
be opened ``mode=ro`` in WAL mode when SQLite needs to create the shared-memory file beside
it; such a database is opened ``immutable=1`` instead (nobody can be writing it there). A
file that is not a readable database is a :class:`RunDatabaseError` naming it, at open.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from spade_async.util.errors import UserError

BUSY_TIMEOUT_MS = 10_000
"""Wait this long for a lock (e.g. a WAL checkpoint) before 'database is locked'."""


class RunDatabaseError(UserError):
    """A run database that cannot be read (damaged, truncated, not a database): exit status 2."""

    exit_code = 2


def connect_readonly(path: Path, *, check_same_thread: bool = True, immutable: bool = False) -> sqlite3.Connection:
    """A read-only connection to the database file ``path`` that has read its schema (raises
    ``sqlite3.Error`` when it cannot): ``mode=ro``, or ``immutable=1`` in a folder this process
    cannot write (see the module's docstring) or when asked (``immutable``: for a caller that
    knows no writer has the file open and must not create SQLite's -wal/-shm files)."""
    uri = Path(path).resolve().as_uri()
    if not immutable:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=check_same_thread)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            conn.close()
            if os.access(Path(path).resolve().parent, os.W_OK):
                raise
    conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=check_same_thread)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def open_readonly(path: str | Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """Open ``path`` read-only; rows are ``sqlite3.Row`` (index or column name).

    Raises ``FileNotFoundError`` when there is no database at ``path`` (``mode=ro`` never
    creates one), :class:`RunDatabaseError` when the file is not a readable database.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no run database here")
    try:
        conn = connect_readonly(path, check_same_thread=check_same_thread)
    except sqlite3.Error as exc:
        raise RunDatabaseError(
            f"{path} cannot be read ({exc}); restore it from a backup (nothing was changed)"
        ) from None
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
