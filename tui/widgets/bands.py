"""The win-rate band histogram: how many live environments are too easy, in band or too hard
at the newest step, and how many designs that generation rejected (they never went live, so
the shares are of the live environments alone).

Why a text bar chart: four bars of counts read faster as labelled rows than as a plot.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from ..stats import REJECTED

_COLORS = {"too easy": "cyan", "in band": "green", "too hard": "magenta", REJECTED: "red"}
_BAR_WIDTH = 24


class BandHistogram(Static):
    def show(self, counts: Sequence[tuple[str, int]]) -> None:
        self.update(render_bands(counts))


def render_bands(counts: Sequence[tuple[str, int]]) -> Text:
    total = sum(n for label, n in counts if label != REJECTED)  # the live environments
    top = max((n for _, n in counts), default=0)
    lines = []
    for label, n in counts:
        width = round(_BAR_WIDTH * n / top) if top else 0
        line = Text(f"{label:>9} ")
        line.append("█" * width, style=_COLORS.get(label, "white"))
        line.append(" " * (_BAR_WIDTH - width))
        if label == REJECTED:
            share = "designs, not live"
        else:
            share = f"{100 * n / total:3.0f}%" if total else "  —"
        line.append(f" {n:>3}  {share}")
        lines.append(line)
    return Text("\n").join(lines)
