"""The run database: an aiosqlite store with one writer and its own reader connection.

Why this shape:

- **WAL + ``synchronous=NORMAL``.** In WAL mode a commit is one ``write()`` of the frames
  into the ``-wal`` file; with NORMAL it is not fsynced per commit, only at checkpoints. That
  is durable against a *process* crash (kill -9, OOM kill, segfault): every transaction whose
  COMMIT returned is in the OS page cache and survives; an interrupted one is rolled back on
  the next open. Only an OS crash or power loss can lose the last few commits (never corrupt
  the file). A training run's risk is the process dying, so NORMAL is the right trade: FULL
  would add an fsync to every metric row for no gain against that risk.
- **One writer.** SQLite allows one writer at a time; a single aiosqlite connection is one
  thread, and an ``anyio.Lock`` makes each multi-statement write one ``BEGIN IMMEDIATE ..
  COMMIT`` that no other task can interleave with. A cancelled write is rolled back
  (shielded), so the connection never stays inside a half-done transaction.
- **Readers apart.** Reads go through a second, ``query_only`` connection, so a large write
  never delays the designer's memory lookup, and WAL lets them run during a write.
- **Named migrations** from ``schema.MIGRATIONS``, each applied once in its own transaction
  and recorded in ``_migrations``; a database from an older version gets only the new ones.

The record families are classes of their own modules, combined here: environments
(``store_envs``), episodes and steps (``store_episodes``), events and steering
(``store_events``), checkpoints and the resume's truncation (``store_checkpoints``), and
evaluations (``store_evals``), each on the shared plumbing of ``store_base``. Every SQL
statement of the package lives in ``spade_async.memory``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from spade_async.memory.records import RUN_STATUSES, RunRecord, env_id_for
from spade_async.memory.schema import MIGRATIONS
from spade_async.memory.store_base import (
    BUSY_TIMEOUT_MS,
    StoreBase,
    StoreError,
    _connect,
    _dumps,
    _loads,
    apply_migrations,
)
from spade_async.memory.store_checkpoints import CheckpointRecords
from spade_async.memory.store_envs import EnvironmentRecords
from spade_async.memory.store_episodes import EpisodeRecords
from spade_async.memory.store_evals import LOOP_BASE_EVAL_ID, LOOP_EVAL_PREFIX, EvalRecords
from spade_async.memory.store_events import EventRecords

__all__ = [
    "BUSY_TIMEOUT_MS",
    "LOOP_BASE_EVAL_ID",
    "LOOP_EVAL_PREFIX",
    "Store",
    "StoreBase",
    "StoreError",
    "apply_migrations",
    "env_id_for",
]


class Store(EnvironmentRecords, EpisodeRecords, EventRecords, CheckpointRecords, EvalRecords):
    """The run's SQLite database. Open with ``await Store.open(path)``; close with ``aclose``."""

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def open(cls, path: str | Path, *, migrations: Sequence[tuple[str, str]] | None = None) -> Store:
        """Open (creating the file and its folders) and migrate; ``migrations`` is for tests."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = await _connect(path, query_only=False)
        try:
            # foreign keys off while migrating (SQLite's advice for table rebuilds), on after
            await apply_migrations(writer, MIGRATIONS if migrations is None else migrations, str(path))
            await writer.execute("PRAGMA foreign_keys=ON")
            reader = await _connect(path, query_only=True)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await writer.close()
            raise
        return cls(path, writer, reader)

    async def aclose(self) -> None:
        """Close both connections (idempotent). Pending writes finish first."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            async with self._lock:
                await self._reader.close()
                await self._writer.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ---------------------------------------------------------------- runs

    async def start_run(self, name: str, config_toml: str, isolation: dict[str, Any] | None) -> int:
        """Insert a new run (status 'running'), make it current and return its id."""
        config_hash = hashlib.sha256(config_toml.encode("utf-8")).hexdigest()
        async with self._tx() as conn:
            cur = await conn.execute(
                "INSERT INTO runs (name, config_toml, config_hash, created_at, status, isolation, "
                "owner_pid, owner_host, heartbeat_at) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                (
                    name,
                    config_toml,
                    config_hash,
                    time.time(),
                    None if isolation is None else _dumps(isolation),
                    os.getpid(),
                    socket.gethostname(),
                    time.time(),
                ),
            )
            run_id = cur.lastrowid
        assert run_id is not None
        self.run_id = int(run_id)
        return self.run_id

    async def resume_run(self, *, mark_running: bool = True) -> int | None:
        """Make the latest run current again (status back to 'running' unless ``mark_running``
        is False); None if there is none."""
        async with self._tx() as conn:
            row = await (await conn.execute("SELECT MAX(id) FROM runs")).fetchone()
            if row is None or row[0] is None:
                return None
            run_id = int(row[0])
            if mark_running:
                await conn.execute(
                    "UPDATE runs SET status = 'running', owner_pid = ?, owner_host = ?, heartbeat_at = ? WHERE id = ?",
                    (os.getpid(), socket.gethostname(), time.time(), run_id),
                )
        self.run_id = run_id
        return run_id

    async def set_run_status(self, status: str) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} not one of {RUN_STATUSES}")
        run_id = self._need_run()
        async with self._tx() as conn:
            if status == "running":  # this process owns the run from now on
                await conn.execute(
                    "UPDATE runs SET status = ?, owner_pid = ?, owner_host = ?, heartbeat_at = ? WHERE id = ?",
                    (status, os.getpid(), socket.gethostname(), time.time(), run_id),
                )
            else:
                await conn.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    async def heartbeat(self) -> None:
        """Record that the owner of the current run is alive (watchers flag a stale heartbeat)."""
        run_id = self._need_run()
        async with self._tx() as conn:
            await conn.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (time.time(), run_id))

    async def run(self, run_id: int | None = None) -> RunRecord | None:
        """The given run (default: the current one)."""
        run_id = self.run_id if run_id is None else run_id
        rows = await self._fetchall("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            return None
        r = rows[0]
        return RunRecord(
            id=r["id"],
            name=r["name"],
            config_toml=r["config_toml"],
            config_hash=r["config_hash"],
            created_at=r["created_at"],
            status=r["status"],
            isolation=_loads(r["isolation"]),
        )
