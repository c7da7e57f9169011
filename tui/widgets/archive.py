"""Archive re-evaluation of the run (``eval.archive_every``), when it has any.

Why in the overview: a retired environment is never played again, so the training curves
cannot show forgetting; the archive's 'still solved' fraction (of the archived environments
solved when they retired, the share the live adapter still solves) sits beside the held-out
eval it complements. One line per round, newest last; hidden while the run has none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from textual.widgets import Static

from spade_async.eval.archive.rounds import Round, rounds

SHOWN_ROUNDS = 5
"""The newest rounds on screen (the report has them all)."""


def _f(v: float) -> str:
    return "—" if math.isnan(v) else f"{v:.2f}"


def render_archive(found: list[Round]) -> Table:
    table = Table(box=None, pad_edge=False, expand=True, show_header=True, header_style="bold")
    for name in ("step", "adapter", "still solved", "return now", "at retirement"):
        table.add_column(name, no_wrap=True, overflow="ellipsis")
    for r in found[-SHOWN_ROUNDS:]:
        still = f"{r.still_solved}/{r.solved_then}" + (f" ({r.fraction:.0%})" if r.solved_then else "")
        style = "bold red" if r.solved_then and r.still_solved < r.solved_then else None
        table.add_row(str(r.step), r.adapter, still, _f(r.return_now), _f(r.return_then), style=style)
    return table


class ArchivePanel(Static):
    DEFAULT_CSS = """
    ArchivePanel { height: auto; max-height: 7; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rows: list[dict[str, Any]] = []

    def add_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows += rows
        self.update(render_archive(rounds(self.rows)))

    def clear(self) -> None:
        self.rows = []
        self.update("")
