"""Held-out evaluation results of the run (``spade-async eval``), when it has any.

Why in the overview: the eval delta is the figure that says whether training helped; it
sits beside the curves it explains. Shows the newest whole-suite row per (model, suite,
metric) with its paired delta and 95% interval; hidden while the run has none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from spade_async.util.textsafe import terminal_safe


def latest_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest row per (model, suite, metric), in first-seen order."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        latest[(row["model"], row["suite"], row["metric"])] = row
    return list(latest.values())


def _f(v: Any, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:+.2f}" if signed else f"{v:.2f}"


def render_evals(rows: list[dict[str, Any]]) -> Table:
    table = Table(box=None, pad_edge=False, expand=True, show_header=True, header_style="bold")
    for name in ("model", "suite", "metric", "base", "score", "Δ", "95% CI"):
        table.add_column(name, no_wrap=True, overflow="ellipsis")
    for r in rows:
        if r["delta"] is None:
            continue  # base rows: their mean is the 'base' column of each adapter row
        significant = r["ci_low"] is not None and (r["ci_low"] > 0 or (r["ci_high"] is not None and r["ci_high"] < 0))
        style = ("bold green" if r["delta"] > 0 else "bold red") if significant else None
        names = (Text(terminal_safe(r[key])) for key in ("model", "suite", "metric"))  # plain text, no markup
        table.add_row(
            *names,
            _f(r["base_mean"]),
            _f(r["mean"]),
            _f(r["delta"], True),
            f"[{_f(r['ci_low'], True)}, {_f(r['ci_high'], True)}]",
            style=style,
        )
    return table


class EvalPanel(Static):
    DEFAULT_CSS = """
    EvalPanel { height: auto; max-height: 8; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rows: list[dict[str, Any]] = []

    def add_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows = latest_rows([*self.rows, *rows])
        self.update(render_evals(self.rows))

    def clear(self) -> None:
        self.rows = []
        self.update("")
