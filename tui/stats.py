"""Pure aggregations the panels show: metric series, bands, per-skill rows, filters, formats.

Why separate from the widgets: these are the numbers a user trusts, so they are plain
functions over the reader's rows, tested without a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spade_async.selfplay.design.status import DesignerTally, tally

from .reader import EnvSummary, RunInfo, StepRow

BANDS: tuple[tuple[str, str], ...] = (
    ("band_too_easy", "too easy"),
    ("band_in_band", "in band"),
    ("band_too_hard", "too hard"),
    ("band_invalid", "rejected"),
)
"""The three bands of the live environments, then the designs rejected at the newest
generation (``band_invalid``), which never went live: shares are of the first three only."""
REJECTED = "rejected"


def points(steps: Sequence[StepRow], key: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(step numbers, values) of one metric's finite values, in step order. Steps are
    numbered from 1, as the header and the console count them."""
    xs: list[int] = []
    ys: list[float] = []
    for s in steps:
        v = s.metrics.get(key)
        if v is not None and math.isfinite(v):
            xs.append(s.step + 1)
            ys.append(v)
    return tuple(xs), tuple(ys)


def latest(steps: Sequence[StepRow], key: str) -> float | None:
    """The metric's value at the newest step that measured it."""
    for s in reversed(steps):
        v = s.metrics.get(key)
        if v is not None and math.isfinite(v):
            return v
    return None


def band_counts(steps: Sequence[StepRow]) -> list[tuple[str, int]]:
    """Win-rate band counts from the newest step that reports any band (zeros before)."""
    for s in reversed(steps):
        if any(key in s.metrics for key, _ in BANDS):
            return [(label, _count(s.metrics.get(key))) for key, label in BANDS]
    return [(label, 0) for _, label in BANDS]


def _count(v: float | None) -> int:
    return int(v) if v is not None and math.isfinite(v) else 0


def designer_tally(envs: Iterable[EnvSummary]) -> DesignerTally:
    """Designed and admitted environments (seeds and injected ones are not designs)."""
    return tally((e.valid, ()) for e in envs if e.origin not in ("seed", "injected"))


@dataclass(frozen=True)
class SkillStats:
    skill: str
    count: int
    valid_pct: float
    mean_win_rate: float | None
    mean_regret: float | None


def skill_stats(envs: Iterable[EnvSummary]) -> list[SkillStats]:
    """One row per skill: how many environments, share valid, mean win rate and regret."""
    groups: dict[str, list[EnvSummary]] = {}
    for e in envs:
        groups.setdefault(e.skill or "(none)", []).append(e)
    rows = []
    for skill in sorted(groups):
        group = groups[skill]
        rows.append(
            SkillStats(
                skill=skill,
                count=len(group),
                valid_pct=100.0 * sum(e.valid for e in group) / len(group),
                mean_win_rate=_mean(e.win_rate for e in group),
                mean_regret=_mean(e.regret for e in group),
            )
        )
    return rows


def _mean(values: Iterable[float | None]) -> float | None:
    vs = [v for v in values if v is not None and math.isfinite(v)]
    return sum(vs) / len(vs) if vs else None


def matches(env: EnvSummary, query: str) -> bool:
    """Case-insensitive substring match over skill, status, domain, origin, id and doc title."""
    q = query.strip().lower()
    if not q:
        return True
    fields = (env.skill, env.status, env.domain, env.origin, env.id, env.doc_title)
    return any(q in f.lower() for f in fields if f)


def recent_envs(envs: Iterable[EnvSummary], query: str = "", limit: int = 200) -> list[EnvSummary]:
    """Newest first (by creation step, then id for a stable order), filtered, capped."""
    chosen = [e for e in envs if matches(e, query)]
    chosen.sort(key=lambda e: (-e.created_step, e.id))
    return chosen[:limit]


def elapsed_s(run: RunInfo, steps: Sequence[StepRow], now: float) -> float:
    """Wall time of the run: up to now while it runs, up to its last step once it stopped."""
    if run.status == "running" or not steps:
        end = now
    else:
        end = steps[-1].created_at
    return max(0.0, end - run.created_at)


def eta_s(run: RunInfo, steps: Sequence[StepRow], window: int = 10) -> float | None:
    """Seconds to run.max_steps at the mean wall time of the last ``window`` steps; None when
    the run is not running, its budget is unknown, or no step has a wall time yet."""
    if run.status != "running" or run.max_steps is None or not steps:
        return None
    walls = [s.wall_s for s in steps[-window:] if s.wall_s is not None]
    if not walls:
        return None
    remaining = max(0, run.max_steps - (steps[-1].step + 1))
    return remaining * sum(walls) / len(walls)


def fmt_duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"


def fmt_num(v: float | None, digits: int = 2) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"
