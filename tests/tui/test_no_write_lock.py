"""The TUI never holds SQLite's write lock, nor a read transaction between polls.

Why it matters: the trainer is the database's single writer; if the monitor could take
the write lock (or keep a transaction open), a watched run would stall or fail with
'database is locked'. The writer here uses ``timeout=0`` so any contention fails at once.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from tests.tui.fixture_db import N_STEPS, T0, insert_event, insert_step, step_metrics
from tui.app import SpadeApp
from tui.reader import RunReader

pytestmark = pytest.mark.anyio


def _write_while_polled(db_path: Path, n: int) -> None:
    conn = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        for i in range(n):
            conn.execute("BEGIN IMMEDIATE")  # takes the write lock or fails right away
            insert_event(conn, N_STEPS + i, "info", f"write {i}", created_at=T0 + 10_000 + i)
            insert_step(conn, N_STEPS + i, step_metrics(N_STEPS - 1))
            conn.execute("COMMIT")
            time.sleep(0.003)
    finally:
        conn.close()


async def test_writer_commits_while_the_tui_polls(db_path: Path) -> None:
    app = SpadeApp(db_path, poll_interval=0.02, clock=lambda: T0)
    n = 60
    async with app.run_test(size=(120, 40)) as pilot:
        await app.poll_now()  # the initial full read
        polls_before = app.polls
        # Raises sqlite3.OperationalError('database is locked') if the TUI ever held the lock.
        await asyncio.to_thread(_write_while_polled, db_path, n)
        assert app.polls > polls_before, "the TUI did not poll during the writes"
        await app.poll_now()
        await pilot.pause()
        assert app.steps[-1].step == N_STEPS + n - 1
        assert app.reader._conn is not None and not app.reader._conn.in_transaction


def test_reader_connection_cannot_write(db_path: Path) -> None:
    reader = RunReader(db_path)
    reader.poll()
    conn = reader._connection()
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
        conn.execute("INSERT INTO events (kind, message, created_at) VALUES ('x', 'y', 0)")
    assert not conn.in_transaction
