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
"""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite
import anyio
import msgspec

from spade_async.memory.play_stats import (
    EPISODE_SQL,
    ERROR_SQL,
    RECENT_EPISODES,
    PlayStats,
    aggregate,
    error_pattern,
    group_rows,
)
from spade_async.memory.records import (
    ENV_ORIGINS,
    ENV_STATUSES,
    RUN_STATUSES,
    EnvRecord,
    EpisodeRecord,
    EventRecord,
    RunRecord,
    StepRecord,
    env_id_for,
)
from spade_async.memory.schema import MIGRATIONS
from spade_async.util.errors import UserError
from spade_async.util.steps import shown_eval_row

__all__ = ["Store", "StoreError", "env_id_for"]

BUSY_TIMEOUT_MS = 10_000
LOOP_EVAL_PREFIX = "loop-step-"
"""``eval_id`` prefix of in-loop evaluation rows (``loop-step-N``); a resume deletes those after its step."""
LOOP_BASE_EVAL_ID = "loop-base"
"""``eval_id`` of the in-loop base-model rows: scored once per run, kept across resumes."""


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


def _env_from_row(row: sqlite3.Row) -> EnvRecord:
    return EnvRecord(
        code=row["code"],
        domain=row["domain"],
        skill=row["skill"],
        origin=row["origin"],
        created_step=row["created_step"],
        hint=row["hint"],
        doc_title=row["doc_title"],
        doc_text=row["doc_text"],
        valid=bool(row["valid"]),
        reasons=list(_loads(row["reasons"]) or []),
        status=row["status"],
        win_rate=row["win_rate"],
        hint_win_rate=row["hint_win_rate"],
        regret=row["regret"],
        designer_reward=row["designer_reward"],
        n_plays=row["n_plays"],
        parent_id=row["parent_id"],
        updated_step=row["updated_step"],
        run_id=row["run_id"],
    )


def _episode_from_row(row: sqlite3.Row) -> EpisodeRecord:
    return EpisodeRecord(
        step=row["step"],
        env_id=row["env_id"],
        adapter_version=row["adapter_version"],
        hinted=bool(row["hinted"]),
        outcome=row["outcome"],
        turns=row["turns"],
        truncated=bool(row["truncated"]),
        transcript=list(_loads(row["transcript"]) or []),
        id=row["id"],
    )


_STATS_FIELDS = (
    "win_rate",
    "hint_win_rate",
    "regret",
    "designer_reward",
    "n_plays",
    "status",
    "updated_step",
)


class Store:
    """The run's SQLite database. Open with ``await Store.open(path)``; close with ``aclose``."""

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self.run_id: int | None = None
        self._writer = writer
        self._reader = reader
        self._lock = anyio.Lock()
        self._closed = False

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

    # ---------------------------------------------------------------- plumbing

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

    # ---------------------------------------------------------------- environments

    async def record_environment(self, env: EnvRecord) -> str:
        """Insert the environment, or update the mutable fields of the row with the same code.

        On a repeat, immutable fields (created_step, skill, doc, origin, parent) keep their first
        values; valid/reasons/status take the new ones; hint and stats take the new
        ones unless they are None; n_plays never goes down.
        """
        if env.origin not in ENV_ORIGINS:
            raise ValueError(f"environment origin {env.origin!r} not one of {ENV_ORIGINS}")
        if env.status not in ENV_STATUSES:
            raise ValueError(f"environment status {env.status!r} not one of {ENV_STATUSES}")
        env_id = env.id
        async with self._tx() as conn:
            await conn.execute(
                """
                INSERT INTO environments (
                    id, run_id, created_step, skill, domain, origin, parent_id, code, hint,
                    doc_title, doc_text, valid, reasons, status, win_rate, hint_win_rate, regret,
                    designer_reward, n_plays, updated_step)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    hint = COALESCE(excluded.hint, hint),
                    valid = excluded.valid,
                    reasons = excluded.reasons,
                    status = excluded.status,
                    win_rate = COALESCE(excluded.win_rate, win_rate),
                    hint_win_rate = COALESCE(excluded.hint_win_rate, hint_win_rate),
                    regret = COALESCE(excluded.regret, regret),
                    designer_reward = COALESCE(excluded.designer_reward, designer_reward),
                    n_plays = MAX(excluded.n_plays, n_plays),
                    updated_step = COALESCE(excluded.updated_step, updated_step)
                """,
                (
                    env_id,
                    self.run_id,
                    env.created_step,
                    env.skill,
                    env.domain,
                    env.origin,
                    env.parent_id,
                    env.code,
                    env.hint,
                    env.doc_title,
                    env.doc_text,
                    int(env.valid),
                    _dumps(list(env.reasons)),
                    env.status,
                    env.win_rate,
                    env.hint_win_rate,
                    env.regret,
                    env.designer_reward,
                    env.n_plays,
                    env.updated_step,
                ),
            )
        return env_id

    async def update_environment_stats(
        self,
        env_id: str,
        *,
        step: int,
        win_rate: float | None,
        hint_win_rate: float | None,
        regret: float | None,
        designer_reward: float | None,
        n_plays: int,
        status: str | None = None,
    ) -> None:
        """Set the stats as given (None = not measured) and ``updated_step = step``.

        Exception: ``designer_reward=None`` keeps the stored value (an environment that is
        live again keeps the reward of its last scored design until it is scored again).
        """
        if status is not None and status not in ENV_STATUSES:
            raise ValueError(f"environment status {status!r} not one of {ENV_STATUSES}")
        async with self._tx() as conn:
            cur = await conn.execute(
                "UPDATE environments SET win_rate = ?, hint_win_rate = ?, regret = ?, designer_reward = COALESCE(?, designer_reward), "
                "n_plays = ?, updated_step = ?, status = COALESCE(?, status) WHERE id = ?",
                (win_rate, hint_win_rate, regret, designer_reward, n_plays, step, status, env_id),
            )
            if cur.rowcount == 0:
                raise KeyError(f"unknown environment {env_id}")

    async def environment(self, env_id: str) -> EnvRecord | None:
        rows = await self._fetchall("SELECT * FROM environments WHERE id = ?", (env_id,))
        return _env_from_row(rows[0]) if rows else None

    async def memory_candidates(self, domain: str, limit: int, *, played_only: bool = True) -> list[EnvRecord]:
        """Valid environments of ``domain``, newest first; by default only played ones (win rate
        known, what retrieval needs); ``played_only=False`` adds unplayed ones such as the seeds."""
        played = "AND win_rate IS NOT NULL " if played_only else ""
        rows = await self._fetchall(
            "SELECT * FROM environments WHERE domain = ? AND valid = 1 AND status != 'invalid' "
            f"{played}ORDER BY created_step DESC, rowid DESC LIMIT ?",
            (domain, limit),
        )
        return [_env_from_row(r) for r in rows]

    async def environment_codes(self, domain: str) -> list[tuple[str, str]]:
        """``(id, code)`` of every environment of ``domain``, any status (what the copy rule checks)."""
        rows = await self._fetchall("SELECT id, code FROM environments WHERE domain = ?", (domain,))
        return [(r["id"], r["code"]) for r in rows]

    async def environment_stats(self) -> dict[str, dict[str, Any]]:
        """Mutable stats of every environment, for a checkpoint (see ``restore_environment_stats``)."""
        rows = await self._fetchall(f"SELECT id, {', '.join(_STATS_FIELDS)} FROM environments")
        return {r["id"]: {f: r[f] for f in _STATS_FIELDS} for r in rows}

    async def restore_environment_stats(self, stats: dict[str, dict[str, Any]]) -> None:
        """Put back stats saved by ``environment_stats`` (after ``truncate_after``, on resume).

        Without it, environments created before the checkpoint keep stats updated after it.
        Ids that no longer exist are ignored.
        """
        params = [(*(s.get(f) for f in _STATS_FIELDS), env_id) for env_id, s in stats.items()]
        sets = ", ".join(f"{f} = ?" for f in _STATS_FIELDS)
        async with self._tx() as conn:
            await conn.executemany(f"UPDATE environments SET {sets} WHERE id = ?", params)

    async def play_stats(self, env_ids: Sequence[str]) -> dict[str, PlayStats]:
        """How the agent played each of ``env_ids`` (``memory.play_stats``: its newest plays of every
        run in this database, and its crashed plays), read on the read-only connection."""
        ids = list(dict.fromkeys(env_ids))
        if not ids:
            return {}
        rows = await self._fetchall(EPISODE_SQL.format(marks=", ".join("?" * len(ids))), (*ids, RECENT_EPISODES))
        grouped = group_rows(ids, [tuple(r) for r in rows])
        stats = {}
        for env_id in ids:
            errors = [r[0] for r in await self._fetchall(ERROR_SQL, (error_pattern(env_id),))]
            stats[env_id] = aggregate(env_id, grouped[env_id], errors)
        return stats

    # ---------------------------------------------------------------- episodes, steps, events

    async def record_episodes(self, episodes: list[EpisodeRecord]) -> None:
        """Insert all episodes in one transaction (all or none)."""
        if not episodes:
            return
        run_id = self._need_run()
        rows = [
            (
                run_id,
                e.step,
                e.env_id,
                e.adapter_version,
                int(e.hinted),
                float(e.outcome),
                e.turns,
                int(e.truncated),
                _dumps(e.transcript),
            )
            for e in episodes
        ]
        async with self._tx() as conn:
            await conn.executemany(
                "INSERT INTO episodes (run_id, step, env_id, adapter_version, hinted, outcome, turns, "
                "truncated, transcript) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    async def episodes(self, *, env_id: str | None = None, step: int | None = None) -> list[EpisodeRecord]:
        """Episodes of the current run (all runs if none), optionally of one env and/or step."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if self.run_id is not None:
            where.append("run_id = ?")
            params.append(self.run_id)
        if env_id is not None:
            where.append("env_id = ?")
            params.append(env_id)
        if step is not None:
            where.append("step = ?")
            params.append(step)
        rows = await self._fetchall(f"SELECT * FROM episodes WHERE {' AND '.join(where)} ORDER BY id", params)
        return [_episode_from_row(r) for r in rows]

    async def record_step(self, step: int, adapter_version: int, metrics: dict[str, Any], wall_s: float) -> None:
        """Insert or replace the step's metrics row (NaN and inf are stored as JSON null)."""
        run_id = self._need_run()
        text = _dumps(metrics)
        async with self._tx() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO steps (run_id, step, adapter_version, wall_s, metrics, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, step, adapter_version, wall_s, text, time.time()),
            )

    async def steps(self) -> list[StepRecord]:
        """Metric rows of the current run, by step."""
        rows = await self._fetchall("SELECT * FROM steps WHERE run_id = ? ORDER BY step", (self._need_run(),))
        return [
            StepRecord(
                step=r["step"],
                adapter_version=r["adapter_version"],
                metrics=_loads(r["metrics"]),
                wall_s=r["wall_s"],
                created_at=r["created_at"],
            )
            for r in rows
        ]

    async def record_event(self, step: int | None, kind: str, message: str) -> None:
        run_id = self._need_run()
        async with self._tx() as conn:
            await conn.execute(
                "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (?, ?, ?, ?, ?)",
                (run_id, step, kind, message, time.time()),
            )

    async def events(self, kind: str | None = None) -> list[EventRecord]:
        """Events of the current run in order, optionally of one kind."""
        sql = "SELECT * FROM events WHERE run_id = ?"
        params: list[Any] = [self._need_run()]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = await self._fetchall(sql + " ORDER BY id", params)
        return [
            EventRecord(step=r["step"], kind=r["kind"], message=r["message"], created_at=r["created_at"]) for r in rows
        ]

    # ---------------------------------------------------------------- checkpoints, resume

    async def record_checkpoint(self, step: int, path: str) -> None:
        """Record a checkpoint; call only after its files are complete on disk."""
        run_id = self._need_run()
        async with self._tx() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, step, path, created_at) VALUES (?, ?, ?, ?)",
                (run_id, step, str(path), time.time()),
            )

    async def checkpoints(self) -> list[tuple[int, str]]:
        """All checkpoints of the current run (of any run if none is current), newest first."""
        if self.run_id is None:
            rows = await self._fetchall("SELECT step, path FROM checkpoints ORDER BY created_at DESC, step DESC")
        else:
            rows = await self._fetchall(
                "SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step DESC",
                (self.run_id,),
            )
        return [(int(r["step"]), str(r["path"])) for r in rows]

    async def latest_checkpoint(self) -> tuple[int, str] | None:
        """``(step, path)`` of the newest checkpoint (see ``checkpoints``), or None."""
        found = await self.checkpoints()
        return found[0] if found else None

    async def truncate_after(self, step: int) -> None:
        """Forget the current run's work after ``step`` (resume from the checkpoint at ``step``).

        Deletes episodes, steps, events, checkpoints, in-loop eval and archive rows with step > ``step`` and environments
        this run created after it (unless another run's episodes still use them), and queues again
        the steering actions settled after it, in one transaction. Stats of older environments are restored by ``restore_environment_stats``.
        """
        run_id = self._need_run()
        async with self._tx() as conn:
            for table in ("episodes", "steps", "events", "checkpoints"):
                await conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND step > ?", (run_id, step))
            await conn.execute(
                "DELETE FROM environments WHERE run_id = ? AND created_step > ? "
                "AND id NOT IN (SELECT env_id FROM episodes)",
                (run_id, step),
            )
            # Steering actions settled after the checkpoint happened in the discarded timeline:
            # queued again, so the resumed run applies each of them once (spade_async.selfplay.steering).
            await conn.execute(
                "UPDATE steer_actions SET status = 'queued', step = NULL, settled_at = NULL, message = NULL "
                "WHERE run_id = ? AND step > ?",
                (run_id, step),
            )
            # In-loop evaluations of the replayed steps (spade_async.eval.inloop); its base rows stay.
            await conn.execute(
                "DELETE FROM evals WHERE run_id = ? AND step > ? AND eval_id LIKE ?",
                (run_id, step, LOOP_EVAL_PREFIX + "%"),
            )
            # Archive rounds of the replayed steps (spade_async.eval.archive).
            await conn.execute("DELETE FROM archive_evals WHERE run_id = ? AND step > ?", (run_id, step))

    # ---------------------------------------------------------------- evals (spade_async.eval)

    EVAL_COLUMNS: tuple[str, ...] = (
        "eval_id",
        "step",
        "model",
        "adapter",
        "suite",
        "task",
        "metric",
        "n",
        "mean",
        "base_mean",
        "delta",
        "ci_low",
        "ci_high",
        "n_errors",
        "seconds",
    )

    async def record_evals(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert evaluation rows (keys: ``EVAL_COLUMNS``) in one transaction, attached to the
        current run, or to the newest run of the file when none is current (``spade-async eval``
        opens a run's database from outside the run)."""
        async with self._tx() as conn:
            run_id = self.run_id
            if run_id is None:
                row = await (await conn.execute("SELECT MAX(id) FROM runs")).fetchone()
                run_id = None if row is None or row[0] is None else int(row[0])
            now = time.time()
            cols = ", ".join(self.EVAL_COLUMNS)
            marks = ", ".join("?" for _ in self.EVAL_COLUMNS)
            await conn.executemany(
                f"INSERT INTO evals (run_id, created_at, {cols}) VALUES (?, ?, {marks})",
                [(run_id, now, *(r.get(c) for c in self.EVAL_COLUMNS)) for r in rows],
            )

    async def evals(self) -> list[dict[str, Any]]:
        """Every evaluation row of this file, oldest first, step labels as a user reads them
        (an old run's too: spade_async.util.steps.shown_eval_row)."""
        rows = await self._fetchall("SELECT * FROM evals ORDER BY id")
        return [shown_eval_row(r) for r in rows]

    # ---------------------------------------------------------------- archive (spade_async.eval.archive)

    ARCHIVE_COLUMNS: tuple[str, ...] = (
        "step",
        "env_id",
        "skill",
        "adapter",
        "retired_step",
        "return_then",
        "return_now",
        "n",
        "n_errors",
        "solved_then",
        "solved_now",
        "seconds",
    )

    async def record_archive(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert one archive round's rows (keys: ``ARCHIVE_COLUMNS``) in one transaction."""
        run_id = self._need_run()
        async with self._tx() as conn:
            now = time.time()
            cols = ", ".join(self.ARCHIVE_COLUMNS)
            marks = ", ".join("?" for _ in self.ARCHIVE_COLUMNS)
            await conn.executemany(
                f"INSERT INTO archive_evals (run_id, created_at, {cols}) VALUES (?, ?, {marks})",
                [(run_id, now, *(r.get(c) for c in self.ARCHIVE_COLUMNS)) for r in rows],
            )

    async def archive_rows(self) -> list[dict[str, Any]]:
        """The current run's archive rows, oldest first."""
        rows = await self._fetchall("SELECT * FROM archive_evals WHERE run_id = ? ORDER BY id", (self._need_run(),))
        return [dict(r) for r in rows]

    # ---------------------------------------------------------------- steering (spade_async.selfplay.steering)

    async def queued_steer_actions(self) -> list[dict[str, Any]]:
        """The current run's steering actions still waiting, oldest first (``args`` decoded)."""
        rows = await self._fetchall(
            "SELECT id, created_at, who, kind, args FROM steer_actions WHERE run_id = ? AND status = 'queued' ORDER BY id",
            (self._need_run(),),
        )
        return [{**dict(r), "args": _loads(r["args"]) or {}} for r in rows]

    async def settle_steer_action(self, action_id: int, status: str, step: int, message: str, event: str) -> bool:
        """Mark a queued action applied or rejected at ``step`` and log ``event``, in one transaction.

        Returns False (and changes nothing) when the row is no longer queued.
        """
        run_id = self._need_run()
        async with self._tx() as conn:
            cur = await conn.execute(
                "UPDATE steer_actions SET status = ?, step = ?, settled_at = ?, message = ? WHERE id = ? AND status = 'queued'",
                (status, step, time.time(), message, action_id),
            )
            if cur.rowcount == 0:
                return False
            await conn.execute(
                "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (?, ?, 'steer', ?, ?)",
                (run_id, step, event, time.time()),
            )
        return True
