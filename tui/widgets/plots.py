"""Live per-step plots: a labelled column chart per metric, on a fixed scale.

Why a small chart of our own rather than Textual's ``Sparkline`` or a plotting library:
``Sparkline`` rescales to the data's own min..max (a regret of 0.20 would look like zero,
and two plots could not be compared), and a plotting library is one more dependency whose
rendering shifts between versions (unstable snapshots). Here each step is one column (steps
are averaged into columns once there are more steps than columns), the y range is fixed
([0, 1], widened to the data when it leaves it, e.g. negative returns) and the title carries
the exact latest value and range, which is what a user reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from tui.stats import fmt_num

_EIGHTHS = " ▁▂▃▄▅▆▇█"


def columns(values: Sequence[float], width: int) -> list[float]:
    """One value per column: the values themselves, or bucket means when they do not fit."""
    n = len(values)
    if n <= width:
        return list(values)
    out = []
    for i in range(width):
        chunk = values[i * n // width : (i + 1) * n // width]
        out.append(sum(chunk) / len(chunk))
    return out


def render_columns(
    values: Sequence[float], width: int, height: int, *, lo: float, hi: float, color: str
) -> Text:
    """Column chart as ``height`` lines of ``width`` cells, oldest step on the left."""
    cols = columns(values, max(1, width))
    levels = [round((v - lo) / ((hi - lo) or 1.0) * height * 8) for v in cols]
    lines = []
    for row in reversed(range(height)):
        line = Text()
        for level in levels:
            fill = level - row * 8
            if row == 0 and fill <= 0:
                line.append("▁", style="grey35")  # a measured value at the bottom of the scale
            else:
                line.append(_EIGHTHS[min(8, max(0, fill))], style=color)
        line.append(" " * (width - len(levels)))
        lines.append(line)
    return Text("\n").join(lines)


class ColumnChart(Widget):
    DEFAULT_CSS = "ColumnChart { height: 2; }"

    def __init__(self, color: str) -> None:
        super().__init__()
        self.color = color
        self.values: list[float] = []

    def set_values(self, values: Sequence[float]) -> None:
        self.values = list(values)
        self.refresh()

    def render(self) -> Text:
        lo = min(0.0, *self.values) if self.values else 0.0
        hi = max(1.0, *self.values) if self.values else 1.0
        return render_columns(
            self.values, self.size.width, self.size.height, lo=lo, hi=hi, color=self.color
        )


class MetricPlot(Vertical):
    DEFAULT_CSS = """
    MetricPlot { height: 1fr; min-height: 3; }
    MetricPlot > Static { height: 1; }
    MetricPlot > ColumnChart { height: 1fr; }
    """

    def __init__(self, title: str, *, color: str = "green", id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.color = color
        self.values: list[float] = []

    def compose(self) -> ComposeResult:
        yield Static(self._label())
        yield ColumnChart(self.color)

    def set_values(self, values: Sequence[float]) -> None:
        self.values = list(values)
        self.query_one(Static).update(self._label())
        self.query_one(ColumnChart).set_values(self.values)

    def _label(self) -> Text:
        text = Text()
        text.append(self.title, style=f"bold {self.color}")
        if not self.values:
            text.append("  no data yet", style="dim")
            return text
        text.append(f"  {fmt_num(self.values[-1], 3)}", style="bold")
        text.append(
            f"   min {fmt_num(min(self.values))}  max {fmt_num(max(self.values))}",
            style="dim",
        )
        return text
