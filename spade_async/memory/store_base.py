"""The plumbing every part of :class:`spade_async.memory.store.Store` shares: the two
connections (one writer, one ``query_only`` reader), the write transaction, the named
migrations, and JSON in and out of text columns. Each record family's methods (environments,
episodes and steps, events and steering, checkpoints, evaluations) are a class of its own
module built on :class:`StoreBase`; ``Store`` combines them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import msgspec

from spade_async.util.errors import UserError

BUSY_TIMEOUT_MS = 10_000


class StoreError(UserError):
    """The database cannot be used as asked (bad state, failed migration, newer schema)."""


def _enc_hook(obj: Any) -> Any:
    """JSON fallback for numpy scalars/arrays and paths (msgspec writes NaN/inf as null)."""
    if hasattr(obj, "tolist"):  # numpy scalar or array
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store {type(obj).__name__} as JSON")


def _dumps(obj: Any) -> str:
    return msgspec.json.encode(obj, enc_hook=_enc_hook).decode("utf-8")


def _loads(text: str | None) -> Any:
    return None if text is None else msgspec.json.decode(text)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


async def _rollback(conn: aiosqlite.Connection) -> None:
    """Roll back if a transaction is open (it may already have committed or never begun)."""
    try:
        await conn.execute("ROLLBACK")
    except (sqlite3.OperationalError, ValueError):
        pass


async def _connect(path: Path, *, query_only: bool) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(str(path), isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if query_only:
            await conn.execute("PRAGMA query_only=ON")
        else:
            row = await (await conn.execute("PRAGMA journal_mode=WAL")).fetchone()
            if row is None or str(row[0]).lower() != "wal":
                raise StoreError(
                    f"{path}: cannot switch to WAL mode (got {row and row[0]!r}); is it on a network filesystem?"
                )
            await conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        await conn.close()
        raise
    return conn


async def apply_migrations(
    conn: aiosqlite.Connection, migrations: Sequence[tuple[str, str]], where: str = "database"
) -> list[str]:
    """Apply the migrations not yet recorded in ``_migrations``, in order; return their names."""
    names = [name for name, _ in migrations]
    if len(set(names)) != len(names):
        raise StoreError(f"duplicate migration names in {names}")
    await conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")

    async def applied_names() -> set[str]:
        return {row[0] for row in await conn.execute_fetchall("SELECT name FROM _migrations")}

    applied = await applied_names()
    unknown = sorted(applied - set(names))
    if unknown:
        raise StoreError(f"{where}: written by a newer spade-async (unknown migrations {unknown}); upgrade to open it")
    done: list[str] = []
    for name, sql in migrations:
        if name in applied:
            continue
        script = (
            f"BEGIN IMMEDIATE;\n{sql}\n;\n"
            f"INSERT INTO _migrations (name, applied_at) VALUES ({_quote(name)}, {time.time()!r});\n"
            "COMMIT;"
        )
        try:
            await conn.executescript(script)
        except sqlite3.Error as exc:
            with anyio.CancelScope(shield=True):
                await _rollback(conn)
            if name in await applied_names():  # another process applied it meanwhile
                continue
            raise StoreError(f"{where}: migration {name} failed: {exc}") from exc
        done.append(name)
    return done


class StoreBase:
    """The connections and the transaction the record families share."""

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self.run_id: int | None = None
        self._writer = writer
        self._reader = reader
        self._lock = anyio.Lock()
        self._closed = False

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the writer, serialised with every other write."""
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        async with self._lock:
            if self._closed:
                raise StoreError(f"{self.path}: store is closed")
            conn = self._writer
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                await conn.execute("COMMIT")
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await _rollback(conn)
                raise

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        return list(await self._reader.execute_fetchall(sql, params))

    def _need_run(self) -> int:
        if self.run_id is None:
            raise StoreError("no current run: call start_run() or resume_run() first")
        return self.run_id
