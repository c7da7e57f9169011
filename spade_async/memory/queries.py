"""Read-only queries on a run database, for the readers outside the run: report, export, TUI.

Why here: every SQL statement of the package lives in ``spade_async.memory`` (the schema in
``schema.py``, the run's writes and reads in ``store.py``, steering in ``steering.py``), so a
change to a table is made, and reviewed, in one layer. Readers elsewhere (``report``,
``export``, ``run``, ``selfplay.design.status``, ``eval``, and the separate ``tui`` package)
call these functions and never write SQL themselves. The functions take a connection (any
connection; :func:`spade_async.memory.readonly.open_readonly` gives a read-only one) and
return rows as SQLite returns them, plain values, or plain records of ``records.py``
(:func:`lineage_rows`); they never write.

The two that open the database themselves (:func:`has_checkpoint`,
:func:`legacy_checkpoint_names`) open it ``mode=ro`` without a busy timeout; a database
killed before its schema was complete is "nothing recorded" (:func:`legacy_checkpoint_names`
reads any SQLite error so; :func:`has_checkpoint` only a missing table, since its False
starts a run over).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from spade_async.memory.records import LineageRow
from spade_async.memory.run_dir import RunDir
from spade_async.util.steps import DB_NAME, PREFIX, folder_number

# --- runs ----------------------------------------------------------------------------------


def latest_run(conn: sqlite3.Connection) -> Any:
    """The newest row of ``runs`` (every column), or None before the run has started."""
    return conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()


def table_names(conn: sqlite3.Connection) -> set[str]:
    """Names of the database's tables (an old run's database lacks the newer ones)."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


# --- steps ---------------------------------------------------------------------------------


def step_metrics(conn: sqlite3.Connection) -> list[Any]:
    """``(step, metrics)`` of every step, oldest first (``metrics`` is the JSON text)."""
    return conn.execute("SELECT step, metrics FROM steps ORDER BY step").fetchall()


def steps_after(conn: sqlite3.Connection, run_id: int, step: int) -> list[Any]:
    """``steps`` rows of run ``run_id`` after internal step ``step``, oldest first."""
    return conn.execute(
        "SELECT step, adapter_version, wall_s, metrics, created_at FROM steps "
        "WHERE run_id = ? AND step > ? ORDER BY step",
        (run_id, step),
    ).fetchall()


def last_step(conn: sqlite3.Connection, run_id: int) -> int:
    """The highest step of run ``run_id`` (-1 when it has none)."""
    return int(conn.execute("SELECT COALESCE(MAX(step), -1) FROM steps WHERE run_id = ?", (run_id,)).fetchone()[0])


# --- events --------------------------------------------------------------------------------


def events_after(conn: sqlite3.Connection, event_id: int) -> list[Any]:
    """Events with an id above ``event_id``, oldest first."""
    return conn.execute(
        "SELECT id, step, kind, message, created_at FROM events WHERE id > ? ORDER BY id",
        (event_id,),
    ).fetchall()


def events_of_kind(conn: sqlite3.Connection, kind: str) -> list[Any]:
    """``(step, message)`` of the events of ``kind``, oldest first."""
    return conn.execute("SELECT step, message FROM events WHERE kind = ? ORDER BY id", (kind,)).fetchall()


def last_event_id(conn: sqlite3.Connection, kind: str | None = None) -> int:
    """The highest event id (of ``kind`` when given); 0 when there is none."""
    if kind is None:
        return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events WHERE kind = ?", (kind,)).fetchone()[0])


# --- environments and episodes -------------------------------------------------------------

ENV_SUMMARY_COLUMNS = (
    "id, created_step, updated_step, skill, domain, origin, status, valid, win_rate, "
    "hint_win_rate, regret, designer_reward, n_plays, doc_title"
)
"""The ``environments`` columns of :func:`env_summaries` (no bulky code, hint or reasons)."""


def designed_envs(conn: sqlite3.Connection) -> list[tuple[Any, Any, Any]]:
    """``(skill, valid, reasons)`` of every designed environment (seed and injected ones left
    out), as plain tuples whatever the connection's row factory; ``reasons`` is JSON text."""
    return [
        (r[0], r[1], r[2])
        for r in conn.execute("SELECT skill, valid, reasons FROM environments WHERE origin NOT IN ('seed', 'injected')")
    ]


def admitted_envs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The environments that passed validation and are not retired as invalid, as dicts."""
    return [
        dict(r)
        for r in conn.execute(
            "SELECT id, skill, origin, code, hint, doc_title, win_rate, hint_win_rate, regret, designer_reward, "
            "n_plays, created_step FROM environments WHERE valid = 1 AND status != 'invalid'"
        )
    ]


def env_summaries(conn: sqlite3.Connection, since: int | None = None) -> list[Any]:
    """:data:`ENV_SUMMARY_COLUMNS` of every environment, or with ``since`` only those created
    or updated at or after that step (inclusive: the step being written may change again)."""
    if since is None:
        return conn.execute(f"SELECT {ENV_SUMMARY_COLUMNS} FROM environments").fetchall()
    return conn.execute(
        f"SELECT {ENV_SUMMARY_COLUMNS} FROM environments WHERE created_step >= ? OR updated_step >= ?",
        (since, since),
    ).fetchall()


def env_detail(conn: sqlite3.Connection, env_id: str) -> Any:
    """:data:`ENV_SUMMARY_COLUMNS` plus ``code, hint, reasons`` of one environment, or None."""
    return conn.execute(
        f"SELECT {ENV_SUMMARY_COLUMNS}, code, hint, reasons FROM environments WHERE id = ?",
        (env_id,),
    ).fetchone()


def latest_episode(conn: sqlite3.Connection, env_id: str, *, hinted: bool) -> Any:
    """The newest plain (or hinted) episode of ``env_id`` with its transcript, or None."""
    return conn.execute(
        "SELECT id, step, adapter_version, hinted, outcome, turns, truncated, transcript "
        "FROM episodes WHERE env_id = ? AND hinted = ? ORDER BY step DESC, id DESC LIMIT 1",
        (env_id, int(hinted)),
    ).fetchone()


def episode_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])


def lineage_rows(conn: sqlite3.Connection) -> list[LineageRow]:
    """Every environment as :class:`LineageRow` (parent link, stats, how it stands), oldest
    first; whatever the connection's row factory. ``reasons`` that are not a JSON list are
    kept as one reason."""
    out: list[LineageRow] = []
    for r in conn.execute(
        "SELECT id, parent_id, origin, skill, created_step, updated_step, valid, status, win_rate, regret, "
        "n_plays, reasons FROM environments ORDER BY created_step, rowid"
    ):
        out.append(
            LineageRow(
                id=str(r[0]),
                parent_id=None if r[1] is None else str(r[1]),
                origin=str(r[2]),
                skill=r[3],
                created_step=int(r[4]),
                updated_step=None if r[5] is None else int(r[5]),
                valid=bool(r[6]),
                status=str(r[7]),
                win_rate=None if r[8] is None else float(r[8]),
                regret=None if r[9] is None else float(r[9]),
                n_plays=int(r[10] or 0),
                reasons=_reasons(r[11]),
            )
        )
    return out


def _reasons(text: str | None) -> tuple[str, ...]:
    try:
        raw = json.loads(text or "[]")
    except ValueError:
        return (str(text),)
    return tuple(str(x) for x in raw) if isinstance(raw, list) else (str(raw),)


# --- evaluations ---------------------------------------------------------------------------


def eval_rows(conn: sqlite3.Connection) -> list[Any]:
    """Every ``evals`` row, oldest first (``sqlite3.OperationalError`` when there is no table)."""
    return conn.execute("SELECT * FROM evals ORDER BY id").fetchall()


def suite_evals_after(conn: sqlite3.Connection, eval_id: int) -> list[Any]:
    """Whole-suite ``evals`` rows (``task = '*'``) with an id above ``eval_id``, oldest first
    (``sqlite3.OperationalError`` for a database written before evaluation existed)."""
    return conn.execute(
        "SELECT id, model, suite, metric, n, mean, base_mean, delta, ci_low, ci_high, step FROM evals "
        "WHERE id > ? AND task = '*' ORDER BY id",
        (eval_id,),
    ).fetchall()


def archive_rows_after(conn: sqlite3.Connection, run_id: int, row_id: int) -> list[Any]:
    """``archive_evals`` rows of run ``run_id`` with an id above ``row_id``, oldest first
    (``sqlite3.OperationalError`` for a database written before the archive existed)."""
    return conn.execute(
        "SELECT id, step, env_id, skill, adapter, retired_step, return_then, return_now, n, n_errors, "
        "solved_then, solved_now FROM archive_evals WHERE run_id = ? AND id > ? ORDER BY id",
        (run_id, row_id),
    ).fetchall()


# --- checkpoints ---------------------------------------------------------------------------


def checkpoint_steps(conn: sqlite3.Connection) -> list[int]:
    """Internal (0-based) steps of the ``checkpoints`` rows, oldest first."""
    return [int(r[0]) for r in conn.execute("SELECT step FROM checkpoints ORDER BY step")]


def has_checkpoint(db_path: Path) -> bool:
    """Whether the run database records a complete checkpoint (False for a half-made database,
    one killed before its schema was complete). A database that cannot be read raises
    ``sqlite3.Error``: a damaged file is never "no checkpoint" (which starts a run over);
    :class:`spade_async.memory.run_dir.RunDir` checks it first and says what to do. No file at
    all (a run killed after writing its config, before its database) records nothing."""
    if not Path(db_path).exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # killed before the schema was complete
            return False
        raise


def legacy_checkpoint_names(run_dir: Path) -> set[str]:
    """Folder names the database records as index-named (written before today's step numbering,
    see :mod:`spade_async.util.steps`)."""
    db = run_dir / DB_NAME
    if not db.is_file():
        return set()
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT step, path FROM checkpoints").fetchall()
    except sqlite3.Error:
        return set()
    return {Path(str(path)).name for step, path in rows if Path(str(path)).name == f"{PREFIX}{int(step)}"}


def checkpoint_folders(run_dir: Path) -> dict[int, Path]:
    """Every ``checkpoints/step_*`` folder of ``run_dir`` by the step number a user reads
    (from 1), oldest first; old index-named folders included under their shown number."""
    root = RunDir(Path(run_dir)).checkpoints
    if not root.is_dir():
        return {}
    legacy = legacy_checkpoint_names(Path(run_dir))
    found: dict[int, Path] = {}
    for folder in root.iterdir():
        n = folder_number(folder.name)
        if n is None or not folder.is_dir():
            continue
        found[n + 1 if folder.name in legacy else n] = folder
    return dict(sorted(found.items()))
