"""Live per-step line charts: several metrics overlaid on step-numbered axes, with a legend
that carries each metric's exact latest value and range.

Why plotext (through Textualize's ``textual-plotext`` widget) rather than a chart of our
own: it already draws braille lines, y and x axes with tick labels, and refits to its
widget on every render, so a chart fills its panel and follows a resize. The two things a
plotting library can get wrong here are settled explicitly:

- the scale: plotext would fit the y range to the data (a regret of 0.20 would fill the
  chart, and two charts could not be compared), so the y range is fixed to [0, 1] with
  ``ylim`` and only widened when the data leave it (negative returns, say); the ticks are
  our own round numbers, and x ticks are whole step numbers (plotext would print 2.75);
- stable snapshots: ``textual-plotext`` is pinned to an exact version in pyproject.toml,
  next to the pinned Textual, because the snapshot SVGs depend on its rendering.

What a user reads is the number, not the pixel: the legend line of each series shows the
latest value (three decimals), min and max. Long runs stay fast and legible: a series with
more points than the chart has braille columns (two per cell) is averaged into buckets.
Steps are counted from 1, as in the header and the console.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.color import Color
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from spade_async.util.textsafe import terminal_safe

from ..stats import fmt_num


@dataclass(frozen=True)
class Series:
    """One line of a chart: a metric's measured values at the steps that measured it."""

    label: str
    color: str  # "#rrggbb": drawn as this exact RGB in the chart and the legend
    steps: tuple[int, ...] = ()
    values: tuple[float, ...] = ()


def downsample(xs: Sequence[float], ys: Sequence[float], limit: int) -> tuple[list[float], list[float]]:
    """At most ``limit`` points: the points themselves, or bucket means when more."""
    n = len(xs)
    if n <= limit:
        return list(xs), list(ys)
    out_x: list[float] = []
    out_y: list[float] = []
    for i in range(limit):
        lo, hi = i * n // limit, (i + 1) * n // limit
        out_x.append(sum(xs[lo:hi]) / (hi - lo))
        out_y.append(sum(ys[lo:hi]) / (hi - lo))
    return out_x, out_y


def nice_ticks(lo: float, hi: float, most: int, *, whole: bool = False) -> list[float]:
    """Round tick positions (steps of 1, 2, 2.5 or 5 times a power of ten) within
    [lo, hi], at most ``most`` of them; the two ends when no round step fits twice.
    ``whole``: only whole numbers (step numbers)."""
    most = max(2, most)
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / (most - 1)
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 2.5, 5, 10) if m * base >= raw)
    if whole:
        step = max(1.0, float(math.ceil(step)))
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    if last - first < 1:
        return [float(math.ceil(lo)), float(math.floor(hi))] if whole else [lo, hi]
    return [round(i * step, 10) for i in range(first, last + 1)]


def y_range(series: Sequence[Series]) -> tuple[float, float]:
    """[0, 1], widened to the data where they leave it."""
    values = [v for s in series for v in s.values]
    return min(0.0, *values) if values else 0.0, max(1.0, *values) if values else 1.0


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks with as many decimals as their spacing needs (0.00 0.25 0.50, 0 5 10)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = 0
    while decimals < 6 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6:
        decimals += 1
    return [f"{t:.{decimals}f}" for t in ticks]


class LineChart(PlotextPlot):
    """The series overlaid on one chart; redrawn to the widget's size on every render."""

    DEFAULT_CSS = "LineChart { width: 1fr; height: 1fr; min-height: 5; }"

    MARK_COLOR = "#ce93d8"
    """Colour of the vertical marks at steps where a steering request took effect."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: tuple[Series, ...] = ()
        self.marks: tuple[int, ...] = ()

    def set_series(self, series: Sequence[Series]) -> None:
        self.series = tuple(series)
        self.refresh()

    def set_marks(self, steps: Sequence[int]) -> None:
        """Draw a vertical line at each of these (1-based) steps inside the chart's range."""
        self.marks = tuple(sorted(set(steps)))
        self.refresh()

    def render(self) -> RenderResult:
        self._draw(self.size.width, self.size.height)
        return super().render()

    def _draw(self, width: int, height: int) -> None:
        plt = self.plt
        plt.clear_data()
        lo, hi = y_range(self.series)
        plt.ylim(lo, hi)
        # Rows inside the frame: height minus two frame lines, the tick labels and "step".
        yticks = nice_ticks(lo, hi, max(2, (height - 4) // 2 + 1))
        plt.yticks(yticks, tick_labels(yticks))
        plt.xlabel("step")
        steps = [x for s in self.series for x in s.steps]
        if not steps:
            plt.xticks([])
            plt.yticks([])
            plt.title("no data yet")
            return
        plt.title("")
        first, last = min(steps), max(steps)
        if first == last:  # one step: centred, with only its own number on the axis
            plt.xlim(first - 1, last + 1)
            xticks = [float(first)]
        else:
            plt.xlim(first, last)
            xticks = nice_ticks(first, last, max(2, width // 8), whole=True)
        plt.xticks(xticks, tick_labels(xticks))
        limit = max(2, 2 * width)  # braille: two dots per cell across
        for s in self.series:
            rgb = Color.parse(s.color).rgb
            if len(s.values) == 1:  # a lone braille dot is easy to miss
                plt.scatter(list(s.steps), list(s.values), color=rgb, marker="●")
            elif s.values:
                xs, ys = downsample(s.steps, s.values, limit)
                plt.plot(xs, ys, color=rgb, marker="braille")
        for step in self.marks:
            if first <= step <= last:
                plt.vline(step, color=Color.parse(self.MARK_COLOR).rgb)


class ChartPanel(Vertical):
    """A legend (one line per series: latest value, min, max) above its line chart."""

    DEFAULT_CSS = """
    ChartPanel { height: 1fr; }
    ChartPanel > .legend { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, labels: Sequence[tuple[str, str]], *, id: str | None = None) -> None:
        """``labels``: (label, colour) per series, in legend order."""
        super().__init__(id=id)
        self.series: tuple[Series, ...] = tuple(Series(label, color) for label, color in labels)

    def compose(self) -> ComposeResult:
        yield Static(self._legend(), classes="legend")
        yield LineChart()

    @property
    def chart(self) -> LineChart:
        return self.query_one(LineChart)

    def set_series(self, series: Sequence[Series]) -> None:
        self.series = tuple(series)
        self.query_one(".legend", Static).update(self._legend())
        self.chart.set_series(self.series)

    def set_marks(self, steps: Sequence[int]) -> None:
        self.chart.set_marks(steps)

    def _legend(self) -> Text:
        width = max(len(s.label) for s in self.series) if self.series else 0
        lines = []
        for s in self.series:
            line = Text()
            line.append("━━ ", style=s.color)
            line.append(terminal_safe(s.label).ljust(width), style=f"bold {s.color}")
            if not s.values:
                line.append("  no data yet", style="dim")
            else:
                line.append(f"  {fmt_num(s.values[-1], 3)}", style="bold")
                line.append(f"   min {fmt_num(min(s.values))}  max {fmt_num(max(s.values))}", style="dim")
            lines.append(line)
        return Text("\n").join(lines)
