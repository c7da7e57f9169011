"""The results as a terminal table (rich) and as JSON-able dicts.

Why the layout: one line per suite and metric for each adapter (base mean, adapter mean,
delta, 95% interval), then the per-task lines underneath, dimmed, so the headline figure is
the first thing read and the per-game breakdown is still there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.table import Table

from spade_async.eval.runner import ALL_TASKS, ResultRow
from spade_async.util.steps import shown


def _num(v: float | None, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def interval_text(row: ResultRow) -> str:
    if row.low is None or row.high is None or math.isnan(row.low):
        return "-"
    return f"[{row.low:+.3f}, {row.high:+.3f}]"


def results_table(rows: Sequence[ResultRow], *, per_task: bool = True, title: str | None = None) -> Table:
    """Base and adapter means with paired deltas; per-task rows when ``per_task``."""
    has_adapter = any(r.delta is not None for r in rows)
    table = Table(title=title, show_lines=False)
    for name, justify in (
        ("model", "left"),
        ("suite", "left"),
        ("task", "left"),
        ("metric", "left"),
        ("n", "right"),
        ("base", "right"),
        ("model mean", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    if has_adapter:
        table.add_column("delta", justify="right")
        table.add_column("95% interval", justify="right")
    table.add_column("errors", justify="right")
    shown = [r for r in rows if per_task or r.task == ALL_TASKS]
    adapters = [r for r in shown if r.delta is not None]
    bases = [r for r in shown if r.delta is None]
    for r in adapters or bases:
        style = None if r.task == ALL_TASKS else "dim"
        significant = r.low is not None and not math.isnan(r.low) and (r.low > 0 or (r.high is not None and r.high < 0))
        base = r.base_mean if r.base_mean is not None else r.mean
        cells = [
            r.model,
            r.suite,
            r.task if r.task != ALL_TASKS else "all",
            r.metric,
            str(r.n),
            _num(base),
            _num(r.mean) if r.delta is not None else "-",
        ]
        if has_adapter:
            delta = _num(r.delta, signed=True)
            cells += [f"[bold]{delta}[/bold]" if significant else delta, interval_text(r)]
        cells.append(str(r.n_errors))
        table.add_row(*cells, style=style)
    return table


def results_json(rows: Sequence[ResultRow], **extra: Any) -> dict[str, Any]:
    """The ``--json`` payload; ``step`` counted from 1 as everywhere a user reads one (the
    database's ``evals.step`` keeps the 0-based index: spade_async.util.steps)."""
    return {**extra, "results": [{**r.as_dict(), "step": None if r.step is None else shown(r.step)} for r in rows]}
