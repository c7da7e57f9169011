"""What a report needs from a run database, read through a read-only connection.

Why one snapshot: the run may be writing while we read; each query sees the last committed
state (WAL), and everything is read in one short connection so the report is consistent
enough for plots (a step written between two queries at worst adds one point).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_async.eval.archive.rounds import Round, rounds
from spade_async.memory import queries
from spade_async.memory.lineage import Lineage, read_lineage
from spade_async.memory.readonly import open_readonly
from spade_async.memory.steering import ActionRow, read_actions
from spade_async.selfplay.design.status import DesignerTally, read_tally
from spade_async.util.steps import shown_eval_row


@dataclass
class RunData:
    name: str
    status: str
    steps: list[int] = field(default_factory=list)
    metrics: list[dict[str, float]] = field(default_factory=list)
    """One dict per step; missing or NaN values are ``nan``."""
    valid_by_skill: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Skill -> (admitted, designed) over the run's designed candidates."""
    evals: list[dict[str, Any]] = field(default_factory=list)
    """Rows of the ``evals`` table (empty for a database without it)."""
    episodes: int = 0
    checkpoints: list[int] = field(default_factory=list)
    """Steps of the ``checkpoints`` table: the database's 0-based indices (``steps`` counts from 1)."""
    mode: str = "spade"
    """selfplay.mode of the run's config ("fixed": no designer, so no regret)."""
    hinted_plays: int | None = None
    """selfplay.hinted_plays of the run's config (0: regret is not measured); None if unknown."""
    model: str | None = None
    """model.name of the run's config."""
    designer: DesignerTally = field(default_factory=lambda: DesignerTally(0, 0))
    """The designer's attempts, admissions and rejection reasons."""
    steering: list[ActionRow] = field(default_factory=list)
    """Steering requests (``steer_actions``), oldest first; empty for a database without them."""
    cluster_events: list[tuple[int | None, str]] = field(default_factory=list)
    """(1-based step, message) of the ``cluster`` events: remote pools or replicas lost, restarted."""
    admitted_designs: list[tuple[int | None, str]] = field(default_factory=list)
    """(1-based step, message) of the ``admitted`` events: each admitted design with its nearest
    shipped environment file and the similarity (spade_async.selfplay.design.similarity)."""
    lineage: Lineage = field(default_factory=Lineage)
    """The tree of mutations (spade_async.memory.lineage; its steps count from 0)."""
    archive: list[Round] = field(default_factory=list)
    """Archive re-evaluation rounds (``eval.archive_every``), in step order; empty when off."""

    def steered_steps(self) -> list[int]:
        """1-based steps at which at least one steering request took effect."""
        return sorted({a.step + 1 for a in self.steering if a.status == "applied" and a.step is not None})

    def series(self, key: str) -> list[float]:
        return [m.get(key, math.nan) for m in self.metrics]


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def _config_facts(data: RunData, config_toml: str | None) -> None:
    try:
        cfg = tomllib.loads(config_toml or "")
    except tomllib.TOMLDecodeError:
        return
    sp = cfg.get("selfplay", {})
    data.mode = str(sp.get("mode", data.mode))
    hinted = sp.get("hinted_plays")
    data.hinted_plays = hinted if isinstance(hinted, int) else None
    name = cfg.get("model", {}).get("name")
    data.model = name if isinstance(name, str) else None


def read_run(db: Path) -> RunData:
    """Read everything a report plots; ``FileNotFoundError`` when ``db`` does not exist."""
    conn = open_readonly(db)
    try:
        run = queries.latest_run(conn)
        data = RunData(name=run["name"] if run else "?", status=run["status"] if run else "?")
        _config_facts(data, run["config_toml"] if run else None)
        data.designer = read_tally(conn)
        for row in queries.step_metrics(conn):
            data.steps.append(int(row["step"]) + 1)  # 1-based, as the console counts
            data.metrics.append({k: _num(v) for k, v in json.loads(row["metrics"]).items()})
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for skill, valid, _reasons in queries.designed_envs(conn):
            counts[skill or "unknown"][0] += int(valid)
            counts[skill or "unknown"][1] += 1
        data.valid_by_skill = {k: (v[0], v[1]) for k, v in sorted(counts.items())}
        data.episodes = queries.episode_count(conn)
        data.checkpoints = queries.checkpoint_steps(conn)
        if "evals" in queries.table_names(conn):
            data.evals = [shown_eval_row(r) for r in queries.eval_rows(conn)]
        if run is not None and "archive_evals" in queries.table_names(conn):
            data.archive = rounds(queries.archive_rows_after(conn, int(run["id"]), 0))
        data.steering = read_actions(conn)
        data.lineage = read_lineage(conn)
        data.cluster_events = [
            (None if r["step"] is None else int(r["step"]) + 1, str(r["message"]))
            for r in queries.events_of_kind(conn, "cluster")
        ]
        data.admitted_designs = [
            (None if r["step"] is None else int(r["step"]) + 1, str(r["message"]))
            for r in queries.events_of_kind(conn, "admitted")
        ]
    finally:
        conn.close()
    return data
