"""A run killed with -9 stays 'running' in its database; the TUI must show it as dead."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from spade_async.memory.schema import MIGRATIONS
from tui.reader import HEARTBEAT_STALE_S, RunReader
from tui.widgets.header import render_header


def make_db(tmp_path: Path) -> Path:
    """A run database as the store writes it, owned by this process."""
    db = tmp_path / "run.sqlite"
    with sqlite3.connect(db) as conn:
        for _name, sql in MIGRATIONS:
            conn.executescript(sql)
        conn.execute(
            "INSERT INTO runs (name, config_toml, config_hash, created_at, status, owner_pid, owner_host, heartbeat_at) "
            "VALUES ('r', '', '', ?, 'running', ?, ?, ?)",
            (time.time(), os.getpid(), socket.gethostname(), time.time()),
        )
    return db


def set_owner(db: Path, pid: int | None, host: str | None = None, beat: float | None = None) -> None:
    with sqlite3.connect(db) as conn:
        if host is None:
            conn.execute("UPDATE runs SET owner_pid = ?", (pid,))
        else:
            conn.execute("UPDATE runs SET owner_pid = ?, owner_host = ?, heartbeat_at = ?", (pid, host, beat))


def status(db: Path) -> str:
    run = RunReader(db).poll().run
    assert run is not None
    return run.status


def test_a_live_owner_is_running_and_a_killed_one_is_dead(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    assert status(db) == "running"  # this test process owns it
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    set_owner(db, victim.pid)
    assert status(db) == "running"
    victim.kill()
    victim.wait()
    assert status(db) == "dead"
    run = RunReader(db).poll().run
    assert "dead" in render_header(run, [], time.time(), owned=False, paused=False, waiting=None).plain


def test_an_owner_on_another_host_is_judged_by_its_heartbeat(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    set_owner(db, 1, "elsewhere", time.time())
    assert status(db) == "running"
    set_owner(db, 1, "elsewhere", time.time() - HEARTBEAT_STALE_S - 1)
    assert status(db) == "dead"


def test_finished_runs_and_runs_without_an_owner_are_shown_as_stored(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    set_owner(db, None)
    assert status(db) == "running"  # a database from before owners were recorded
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET status = 'finished', owner_pid = 999999999")
    assert status(db) == "finished"
