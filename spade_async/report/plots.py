"""The report's PNG plots (matplotlib, Agg backend: no display needed).

Why these plots: they are the questions a SPADE run must answer. Is the hint informative
(regret, with the hinted and plain arms it is the difference of)? Does the agent improve
(return)? Does the designer keep environments learnable and in the target band (learnable
fraction, band shares)? Does it write code that runs (valid fraction per skill)? Is the pool
diverse (Vendi score per environment)? Does the adapter beat the base on held-out items
(eval deltas with their 95% intervals)? Where did each line of mutations go, and where did it
end (the lineage)? Does it still solve what it learned earlier (the archive's retired
environments replayed)?

Every figure is ``SIZE`` inches at ``DPI``, so each PNG is exactly ``PIXELS`` pixels; a plot
with nothing to show says so inside the frame instead of being left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from spade_async.memory.lineage import (
    END_EXPELLED,
    END_LIVE,
    END_NEVER_LIVE,
    END_REJECTED,
    END_RETIRED,
    END_RETIRED_BY_HAND,
    LineageNode,
)
from spade_async.report.data import RunData

SIZE = (8.0, 4.0)
DPI = 100
PIXELS = (int(SIZE[0] * DPI), int(SIZE[1] * DPI))
"""(width, height) of every PNG."""
BANDS = (
    ("band_too_hard", "too hard", "#c0392b"),
    ("band_in_band", "in band", "#27ae60"),
    ("band_too_easy", "too easy", "#2980b9"),
)
"""The bands of the live environments. ``band_invalid`` (designs rejected at the last
generation) is not among them: a rejected design never goes live."""


def _empty(ax: Axes, why: str) -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="gray")


def _finite(xs: list[int], ys: list[float]) -> tuple[list[int], list[float]]:
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if not math.isnan(y)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


# Marker, size, fill and line style per series of one chart, so that two series with the
# same value at a step stay visible: a filled dot sits inside the hollow marks drawn before it.
STYLES: tuple[dict[str, Any], ...] = (
    {"marker": "o", "markersize": 9, "markerfacecolor": "none", "linestyle": "-"},
    {"marker": "s", "markersize": 6, "markerfacecolor": "none", "linestyle": "--"},
    {"marker": "o", "markersize": 3, "linestyle": ":"},
)
UNIT_RANGE = (-0.02, 1.02)
"""The y range of charts of returns, regret and shares: [0, 1] like the TUI's, so one lost game
in sixteen does not look like a crash; widened only when the data leave it."""


def _unit_ylim(ax: Axes, values: list[float]) -> None:
    finite = [v for v in values if not math.isnan(v)]
    lo = min([UNIT_RANGE[0], *[v - 0.02 for v in finite]])
    hi = max([UNIT_RANGE[1], *[v + 0.02 for v in finite]])
    ax.set_ylim(lo, hi)


def _lines(
    ax: Axes,
    data: RunData,
    series: list[tuple[str, str]],
    ylabel: str,
    *,
    unit: bool = True,
    why_empty: str = "not measured in this run",
) -> None:
    drawn: list[float] = []
    for i, (key, label) in enumerate(series):
        xs, ys = _finite(data.steps, data.series(key))
        if xs:
            style: dict[str, Any] = (
                dict(STYLES[i % len(STYLES)]) if len(series) > 1 else {"marker": "o", "markersize": 3}
            )
            if len(xs) >= 30:
                style["marker"] = None
            ax.plot(xs, ys, label=label, **style)
            drawn += ys
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if unit:
        _unit_ylim(ax, drawn)
    _mark_steering(ax, data, bool(drawn))
    if drawn:
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
    else:
        _empty(ax, why_empty)


def regret_not_measured(data: RunData) -> str | None:
    """Why the run has no regret to show (None when it measures regret)."""
    if data.mode == "fixed":
        return 'regret does not apply: a fixed-pool run has no designer to reward (selfplay.mode = "fixed")'
    if data.hinted_plays == 0:
        return "regret not measured: selfplay.hinted_plays = 0 (no hinted plays)"
    return None


def _mark_steering(ax: Axes, data: RunData, drawn: bool) -> None:
    """A dotted vertical line at each step where a steering request took effect."""
    for i, step in enumerate(data.steered_steps() if drawn else []):
        ax.axvline(step, color="#8e44ad", linestyle=":", linewidth=1.2, label="steered" if i == 0 else None)


def plot_regret(ax: Axes, data: RunData) -> None:
    ax.set_title("hint regret and the two arms")
    why = regret_not_measured(data)
    if why is not None and all(math.isnan(v) for v in data.series("regret_mean")):
        ax.set_xlabel("step")
        ax.set_ylabel("regret / mean return")
        ax.set_ylim(*UNIT_RANGE)
        _empty(ax, why)
        return
    _lines(
        ax,
        data,
        [
            ("regret_mean", "regret (clipped, scaled)"),
            ("hint_return_mean", "hinted arm return"),
            ("plain_return_mean", "plain arm return"),
        ],
        "regret / mean return",
    )


def plot_return(ax: Axes, data: RunData) -> None:
    ax.set_title("agent return (plain plays, trained on)")
    _lines(ax, data, [("agent_return_mean", "agent return")], "mean outcome")


def plot_learnable(ax: Axes, data: RunData) -> None:
    ax.set_title("learnable fraction (win rate in [0.2, 0.8])")
    _lines(ax, data, [("learnable_fraction", "learnable fraction")], "share of live envs")


def plot_bands(ax: Axes, data: RunData) -> None:
    ax.set_title("win-rate band shares of the live environments")
    counts = [[0.0 if math.isnan(v) else v for v in data.series(key)] for key, _, _ in BANDS]
    totals = [sum(col) for col in zip(*counts, strict=True)] if counts and data.steps else []
    if not totals or not any(totals):
        _empty(ax, "not measured in this run")
        return
    shares = [[c / t if t else 0.0 for c, t in zip(row, totals, strict=True)] for row in counts]
    ax.stackplot(
        data.steps, shares, labels=[label for _, label, _ in BANDS], colors=[c for _, _, c in BANDS], alpha=0.85
    )
    ax.set_xlabel("step")
    ax.set_ylabel("share")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize=8)


def plot_valid_by_skill(ax: Axes, data: RunData) -> None:
    ax.set_title("valid fraction of designed environments, per skill")
    if not data.valid_by_skill:
        _empty(ax, "no designed environments (fixed pool run)")
        return
    skills = list(data.valid_by_skill)
    fractions = [ok / total if total else 0.0 for ok, total in data.valid_by_skill.values()]
    bars = ax.barh(skills, fractions, color="#8e44ad")
    for bar, (ok, total) in zip(bars, data.valid_by_skill.values(), strict=True):
        ax.text(bar.get_width() + 0.01, bar.get_y() + bar.get_height() / 2, f"{ok}/{total}", va="center", fontsize=8)
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("admitted / designed")


def plot_diversity(ax: Axes, data: RunData) -> None:
    ax.set_title("diversity: Vendi score / number of live environments")
    ratio = [
        v / n if n and not math.isnan(n) and n > 0 else math.nan
        for v, n in zip(data.series("env_diversity"), data.series("n_envs"), strict=True)
    ]
    xs, ys = _finite(data.steps, ratio)
    if not xs:
        _empty(ax, "not measured in this run")
        return
    ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, color="#d35400")
    ax.set_xlabel("step")
    ax.set_ylabel("Vendi / n (1 = all distinct)")
    ax.set_ylim(0, 1.05)
    ax.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])  # fixed: a flat line near 1 must not zoom the axis in
    ax.grid(alpha=0.3)


def eval_headlines(data: RunData) -> list[dict[str, Any]]:
    """Per (model, suite, metric), the newest whole-suite row that has a delta."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in data.evals:
        if row["task"] == "*" and row["delta"] is not None:
            latest[(row["model"], row["suite"], row["metric"])] = row
    return list(latest.values())


def plot_evals(ax: Axes, data: RunData) -> None:
    ax.set_title("held-out evaluation: adapter - base, 95% interval")
    rows = eval_headlines(data)
    if not rows:
        _empty(ax, "no evaluation yet: spade-async eval RUN_DIR")
        return
    labels = [f"{r['model']} {r['suite']} {r['metric']}" for r in rows]
    deltas = [r["delta"] for r in rows]
    lows = [r["delta"] - r["ci_low"] if r["ci_low"] is not None else 0.0 for r in rows]
    highs = [r["ci_high"] - r["delta"] if r["ci_high"] is not None else 0.0 for r in rows]
    ys = list(range(len(rows)))
    ax.errorbar(deltas, ys, xerr=[lows, highs], fmt="o", capsize=4, color="#2c3e50")
    ax.axvline(0.0, color="gray", linewidth=1, linestyle="--")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("paired delta")
    ax.invert_yaxis()


END_COLOURS: dict[str, str] = {
    END_LIVE: "#27ae60",
    END_RETIRED: "#2980b9",
    END_RETIRED_BY_HAND: "#e67e22",
    END_EXPELLED: "#8e0000",
    END_REJECTED: "#e74c3c",
    END_NEVER_LIVE: "#bdc3c7",
}
"""The colour of each way a lineage node ended (spade_async.memory.lineage.ENDS)."""
NOT_PLAYED_Y = -0.1
"""Where the lineage plot puts environments with no win rate (rejected, never played)."""


def plot_lineage(ax: Axes, data: RunData) -> None:
    """Each mutation line: a dot per environment at (step born, win rate), a segment from each
    parent to each of its mutations, coloured by how the environment ended."""
    ax.set_title("lineage: each environment at the step it was born, linked to its parent")
    lineage = data.lineage
    edges = lineage.edges()
    if not edges:
        _empty(ax, "no mutations in this run: every environment is a seed or a fresh design")
        return

    def at(node: LineageNode) -> tuple[int, float]:
        return node.created_step + 1, NOT_PLAYED_Y if node.win_rate is None else node.win_rate

    for parent, child in edges:
        (x0, y0), (x1, y1) = at(lineage.nodes[parent]), at(lineage.nodes[child])
        ax.plot([x0, x1], [y0, y1], color="#7f8c8d", linewidth=1, zorder=1)
    shown = list(lineage.walk(lineage.branching_roots()))
    for end, colour in END_COLOURS.items():
        points = [at(n) for n in shown if n.end == end]
        if points:
            ax.scatter([p[0] for p in points], [p[1] for p in points], color=colour, s=28, zorder=2, label=end)
    ax.axhline(NOT_PLAYED_Y / 2, color="gray", linewidth=0.5, linestyle=":")
    ax.set_xlabel("step")
    ax.set_ylabel("win rate (plain plays)")
    ax.set_ylim(NOT_PLAYED_Y - 0.08, 1.05)
    ax.set_yticks([NOT_PLAYED_Y, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0], ["not played", "0", "0.2", "0.4", "0.6", "0.8", "1"])
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)


def plot_archive(ax: Axes, data: RunData) -> None:
    ax.set_title("archive: retired environments replayed by the live adapter")
    found = [r for r in data.archive if not math.isnan(r.return_now)]
    if not found:
        _empty(ax, "no archive round: eval.archive_every = 0, or nothing retired yet")
        return
    xs = [r.step for r in found]
    ax.plot(xs, [r.return_now for r in found], label="return now", **STYLES[0])
    ax.plot(xs, [r.return_then for r in found], label="return at retirement", **STYLES[1])
    solved = [(r.step, r.fraction) for r in found if r.solved_then]
    if solved:
        ax.plot(*zip(*solved, strict=True), label="still solved (share)", **STYLES[2])
    ax.set_xlabel("step")
    ax.set_ylabel("mean outcome / share")
    _unit_ylim(ax, [r.return_now for r in found] + [r.return_then for r in found])
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)


PLOTS: dict[str, tuple[Callable[[Axes, RunData], None], str]] = {
    "regret.png": (plot_regret, "Regret and both arms"),
    "agent_return.png": (plot_return, "Agent return"),
    "learnable_fraction.png": (plot_learnable, "Learnable fraction"),
    "bands.png": (plot_bands, "Win-rate band shares"),
    "valid_by_skill.png": (plot_valid_by_skill, "Valid fraction per skill"),
    "diversity.png": (plot_diversity, "Vendi / n"),
    "eval_deltas.png": (plot_evals, "Held-out evaluation deltas"),
    "lineage.png": (plot_lineage, "Lineage: win rate along mutation lines"),
    "archive.png": (plot_archive, "Archive re-evaluation (forgetting)"),
}
"""File name -> (drawing function, section title)."""


def draw(name: str, data: RunData) -> Figure:
    """The figure of plot ``name`` (a key of ``PLOTS``); the caller closes it."""
    plot, _title = PLOTS[name]
    fig: Figure = plt.figure(figsize=SIZE, dpi=DPI)
    try:
        ax = fig.add_subplot()
        plot(ax, data)
        if ax.get_xlabel() == "step":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        fig.tight_layout()
    except BaseException:
        plt.close(fig)
        raise
    return fig


def write_plots(data: RunData, out: Path) -> list[Path]:
    """Draw every plot into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in PLOTS:
        fig = draw(name, data)
        try:
            fig.savefig(out / name, dpi=DPI)
        finally:
            plt.close(fig)
        written.append(out / name)
    return written
