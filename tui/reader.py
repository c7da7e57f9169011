"""Incremental, read-only polling of a run database.

Why incremental: the TUI refreshes every second for hours; each poll asks only for rows it
has not seen (steps after the last step, events after the last id, environments touched at
or after the last step it saw), so a poll stays a few small indexed queries however long the
run. Bulky columns (code, doc text, transcripts) are read only for the environment the user
selects. This module knows nothing about Textual, so it is tested on its own.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_async.memory import queries
from spade_async.memory.lineage import Lineage, read_lineage
from spade_async.util.steps import shown_eval_row

from .db import open_for_polling


@dataclass(frozen=True)
class RunInfo:
    id: int
    name: str
    status: str
    """As stored, except ``dead`` for a ``running`` run whose owner process is gone."""
    created_at: float
    max_steps: int | None = None
    """run.max_steps of the run's config (None when unreadable)."""
    model: str | None = None
    """model.name of the run's config (None when unreadable)."""
    mode: str | None = None
    """selfplay.mode of the run's config ("fixed": no designer), None when unreadable."""


def _config(config_toml: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(config_toml or "")
    except tomllib.TOMLDecodeError:
        return {}


def _max_steps(cfg: dict[str, Any]) -> int | None:
    value = cfg.get("run", {}).get("max_steps")
    return int(value) if isinstance(value, int) else None


def _text_field(cfg: dict[str, Any], table: str, key: str) -> str | None:
    value = cfg.get(table, {}).get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class StepRow:
    step: int
    adapter_version: int
    wall_s: float | None
    created_at: float
    metrics: dict[str, float]


@dataclass(frozen=True)
class EventRow:
    id: int
    step: int | None
    kind: str
    message: str
    created_at: float


@dataclass(frozen=True)
class EnvSummary:
    id: str
    created_step: int
    updated_step: int | None
    skill: str | None
    domain: str
    origin: str
    status: str
    valid: bool
    win_rate: float | None
    hint_win_rate: float | None
    regret: float | None
    designer_reward: float | None
    n_plays: int
    doc_title: str | None


@dataclass(frozen=True)
class Turn:
    role: str
    text: str
    reward: float | None


@dataclass(frozen=True)
class Episode:
    id: int
    step: int
    adapter_version: int
    hinted: bool
    outcome: float
    turns: int
    truncated: bool
    transcript: list[Turn]


@dataclass(frozen=True)
class EnvDetail:
    summary: EnvSummary
    code: str
    hint: str | None
    doc_title: str | None
    reasons: list[str]
    plain: Episode | None
    hinted: Episode | None


@dataclass
class PollResult:
    """What changed since the previous poll. ``waiting`` says why there is nothing yet."""

    run: RunInfo | None = None
    steps: list[StepRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    envs: list[EnvSummary] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)
    """New whole-suite rows of the ``evals`` table (held-out evaluation), oldest first."""
    archive: list[dict[str, Any]] = field(default_factory=list)
    """New rows of the ``archive_evals`` table (archive re-evaluation), oldest first."""
    waiting: str | None = None
    reset: bool = False  # the run was rewound (resume): drop what was shown, this is all of it


class RunReader:
    """Polls one run database; every method is safe to call from a worker thread."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._last_step = -1
        self._last_event_id = 0
        self._last_eval_id = 0
        self._last_archive_id = 0
        self._env_mark: int | None = None  # highest created/updated step seen; None: not loaded
        self._epoch: tuple[int, int] | None = None  # (run id, newest 'resume' event id)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_for_polling(self.db_path)
        return self._conn

    def poll(self) -> PollResult:
        """Return the rows added or changed since the last call (all of them the first time)."""
        with self._lock:
            try:
                conn = self._connection()
                return self._poll(conn)
            except FileNotFoundError:
                return PollResult(waiting=f"waiting for {self.db_path}")
            except sqlite3.Error as exc:
                # Schema not created yet, or a transient SQLite error: try again next poll.
                return PollResult(waiting=f"database not readable yet: {exc}")

    def _poll(self, conn: sqlite3.Connection) -> PollResult:
        row = queries.latest_run(conn)
        if row is None:
            return PollResult(waiting="waiting for the run to start")
        status = row["status"]
        if status == "running" and owner_gone(row, time.time()):
            status = "dead"
        toml = _config(row["config_toml"])
        run = RunInfo(
            row["id"],
            row["name"],
            status,
            row["created_at"],
            _max_steps(toml),
            _text_field(toml, "model", "name"),
            _text_field(toml, "selfplay", "mode"),
        )
        reset = self._rewound(conn, run.id)
        if reset:
            self._last_step, self._last_event_id, self._env_mark = -1, 0, None
        steps = [
            StepRow(
                step=r["step"],
                adapter_version=r["adapter_version"],
                wall_s=r["wall_s"],
                created_at=r["created_at"],
                metrics=_parse_metrics(r["metrics"]),
            )
            for r in queries.steps_after(conn, run.id, self._last_step)
        ]
        events = [
            EventRow(r["id"], r["step"], r["kind"], r["message"], r["created_at"])
            for r in queries.events_after(conn, self._last_event_id)
        ]
        # Inclusive: rows of the step being written may change again before it ends.
        envs = [_env_summary(r) for r in queries.env_summaries(conn, since=self._env_mark)]
        if steps:
            self._last_step = steps[-1].step
        if events:
            self._last_event_id = events[-1].id
        marks = [max(e.created_step, e.updated_step or 0) for e in envs]
        self._env_mark = max([self._env_mark or 0, *marks])
        if reset:
            self._last_eval_id = self._last_archive_id = 0
        evals = self._new_evals(conn)
        archive = self._new_archive(conn, run.id)
        return PollResult(run=run, steps=steps, events=events, envs=envs, reset=reset, evals=evals, archive=archive)

    def _new_archive(self, conn: sqlite3.Connection, run_id: int) -> list[dict[str, Any]]:
        """Archive rows of the run added since the last poll ([] for a database without them)."""
        try:
            rows = queries.archive_rows_after(conn, run_id, self._last_archive_id)
        except sqlite3.OperationalError:  # a run written before the archive existed
            return []
        if rows:
            self._last_archive_id = int(rows[-1]["id"])
        return [dict(r) for r in rows]

    def _new_evals(self, conn: sqlite3.Connection) -> list[dict[str, Any]]:
        """Whole-suite eval rows added since the last poll ([] for a database without evals)."""
        try:
            rows = queries.suite_evals_after(conn, self._last_eval_id)
        except sqlite3.OperationalError:  # a run written before evaluation existed
            return []
        if rows:
            self._last_eval_id = int(rows[-1]["id"])
        return [shown_eval_row(r) for r in rows]  # an old run's labels in today's step numbering

    def _rewound(self, conn: sqlite3.Connection, run_id: int) -> bool:
        """True when rows already shown may have been deleted or rewritten.

        A resume truncates steps, events and environments after its checkpoint and then
        writes those steps again (event ids can even be reused), so watermarks alone would
        miss it; the newest 'resume' event (or a new run row) marks a new epoch. The shrink
        checks catch a truncation seen before its 'resume' event is written.
        """
        resume = queries.last_event_id(conn, kind="resume")
        epoch = (run_id, resume)
        changed = self._epoch is not None and epoch != self._epoch
        self._epoch = epoch
        if self._last_step >= 0:
            changed = changed or queries.last_step(conn, run_id) < self._last_step
        if self._last_event_id > 0:
            changed = changed or queries.last_event_id(conn) < self._last_event_id
        return changed

    def load_lineage(self) -> Lineage | None:
        """The run's tree of mutations (spade_async.memory.lineage); None while unreadable."""
        with self._lock:
            try:
                return read_lineage(self._connection())
            except (FileNotFoundError, sqlite3.Error):
                return None

    def load_detail(self, env_id: str) -> EnvDetail | None:
        """Read one environment's code, hint, document and its latest plain and hinted play."""
        with self._lock:
            try:
                conn = self._connection()
                row = queries.env_detail(conn, env_id)
                if row is None:
                    return None
                plain = _latest_episode(conn, env_id, hinted=False)
                hinted = _latest_episode(conn, env_id, hinted=True)
            except (FileNotFoundError, sqlite3.Error):
                return None
        return EnvDetail(
            summary=_env_summary(row),
            code=row["code"],
            hint=row["hint"],
            doc_title=row["doc_title"],
            reasons=_parse_reasons(row["reasons"]),
            plain=plain,
            hinted=hinted,
        )


def _latest_episode(conn: sqlite3.Connection, env_id: str, *, hinted: bool) -> Episode | None:
    r = queries.latest_episode(conn, env_id, hinted=hinted)
    if r is None:
        return None
    return Episode(
        id=r["id"],
        step=r["step"],
        adapter_version=r["adapter_version"],
        hinted=bool(r["hinted"]),
        outcome=r["outcome"],
        turns=r["turns"],
        truncated=bool(r["truncated"]),
        transcript=_parse_transcript(r["transcript"]),
    )


HEARTBEAT_STALE_S = 120.0
"""A running run whose heartbeat is older than this is taken as dead (its owner stamps every 10 s)."""


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:  # a killed, unreaped child is a zombie: dead
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_gone(row: sqlite3.Row, now: float) -> bool:
    """Whether the process that owns a ``running`` run is gone (killed with -9, machine lost).

    On the owner's host: its pid no longer runs. Elsewhere: no heartbeat for
    ``HEARTBEAT_STALE_S``. A database from before owners were recorded is never flagged.
    """
    keys = row.keys()
    if "owner_pid" not in keys or row["owner_pid"] is None:
        return False
    if row["owner_host"] == socket.gethostname():
        return not _pid_alive(int(row["owner_pid"]))
    beat = row["heartbeat_at"]
    return beat is not None and now - float(beat) > HEARTBEAT_STALE_S


def _env_summary(r: sqlite3.Row) -> EnvSummary:
    return EnvSummary(
        id=r["id"],
        created_step=r["created_step"],
        updated_step=r["updated_step"],
        skill=r["skill"],
        domain=r["domain"],
        origin=r["origin"],
        status=r["status"],
        valid=bool(r["valid"]),
        win_rate=r["win_rate"],
        hint_win_rate=r["hint_win_rate"],
        regret=r["regret"],
        designer_reward=r["designer_reward"],
        n_plays=r["n_plays"],
        doc_title=r["doc_title"],
    )


def _parse_metrics(text: str) -> dict[str, float]:
    """Numeric metrics only; a malformed blob is shown as 'not measured', never a crash."""
    try:
        raw: Any = json.loads(text)
    except (TypeError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _parse_reasons(text: str | None) -> list[str]:
    try:
        raw: Any = json.loads(text or "[]")
    except ValueError:
        return [str(text)]
    return [str(x) for x in raw] if isinstance(raw, list) else [str(raw)]


def _parse_transcript(text: str) -> list[Turn]:
    try:
        raw: Any = json.loads(text)
    except (TypeError, ValueError):
        return []
    turns: list[Turn] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        reward = item.get("reward")
        value = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else math.nan
        turns.append(
            Turn(
                role=str(item.get("role", "?")),
                text=str(item.get("text", "")),
                reward=value if math.isfinite(value) else None,
            )
        )
    return turns
