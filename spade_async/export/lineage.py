"""Export a run's lineage (the tree of mutations) as one JSON document for other tools.

Why a document of its own: the report draws the lines and the TUI browses them, but a person
comparing runs, or plotting lines their own way, needs the tree as data. It is versioned plain
data (``format`` and ``version`` first): a reader checks both and a later change that is not
backward compatible raises the version. Steps count from 1, as the console and the report do
(the database's own indices count from 0: spade_async.util.steps). The database is read
through a read-only connection, so exporting from a live run does not disturb it.

The fields of each node are those of :class:`spade_async.memory.lineage.LineageNode`:
``parent`` is the link the tree follows (null for a root), ``recorded_parent`` the one the
store holds, and ``cut`` says why they differ (``missing``: no such environment; ``cycle``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade_async.memory import queries
from spade_async.memory.lineage import ENDS, Lineage, LineageNode, read_lineage
from spade_async.memory.readonly import open_readonly
from spade_async.util.steps import DB_NAME, shown

LINEAGE_FORMAT = "spade-async/lineage"
LINEAGE_VERSION = 1
"""Raised when a field changes meaning or goes away (a new field alone keeps the version)."""


def _step(index: int | None) -> int | None:
    return None if index is None else shown(index)


def node_data(node: LineageNode) -> dict[str, Any]:
    """One node as plain data (steps counted from 1)."""
    return {
        "id": node.id,
        "parent": node.parent_id,
        "recorded_parent": node.recorded_parent,
        "cut": node.cut,
        "generation": node.generation,
        "origin": node.origin,
        "skill": node.skill,
        "born_step": shown(node.created_step),
        "win_rate": node.win_rate,
        "regret": node.regret,
        "n_plays": node.n_plays,
        "end": node.end,
        "ended_step": _step(node.ended_step),
        "end_reason": node.end_reason,
        "children": list(node.children),
    }


def lineage_data(lineage: Lineage, run_name: str | None) -> dict[str, Any]:
    """The whole document: a summary, the roots, the links and every node (parents first)."""
    return {
        "format": LINEAGE_FORMAT,
        "version": LINEAGE_VERSION,
        "run": run_name,
        "steps_counted_from": 1,
        "ends": list(ENDS),
        "summary": {
            "environments": len(lineage.nodes),
            "links": len(lineage.edges()),
            "lines": len(lineage.branching_roots()),
            "deepest_generation": lineage.depth(),
        },
        "roots": list(lineage.roots),
        "edges": [{"parent": parent, "child": child} for parent, child in lineage.edges()],
        "nodes": [node_data(n) for n in lineage.walk()],
    }


def read_lineage_data(run_dir: Path) -> dict[str, Any]:
    """The lineage document of the run in ``run_dir`` (``FileNotFoundError`` without a database)."""
    conn = open_readonly(Path(run_dir) / DB_NAME)
    try:
        run = queries.latest_run(conn)
        lineage = read_lineage(conn)
    finally:
        conn.close()
    return lineage_data(lineage, None if run is None else str(run["name"]))


def lineage_json(data: dict[str, Any]) -> str:
    """``data`` as JSON text (strict: a NaN would be an error, not a token other tools reject)."""
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
