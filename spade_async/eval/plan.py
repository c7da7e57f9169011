"""What an evaluation will cost, said before it starts, and an honest time left while it runs.

Why: ``spade-async eval`` ran 37 minutes where its flags suggested a few, and its progress
bar read ``0:00:01`` with 57 of 72 episodes left (issue 26). The bar's own estimate averages
the last seconds of a stream that arrives in waves (``concurrency`` episodes run together and
end close together), so between waves it is meaningless.

The plan (:func:`plan_lines`) names every suite (tasks, items, seeds), the most tokens an
episode or answer can generate, each model and what it will score (the base model's cached
suites score nothing), and an estimate of the time to score what is left.

Time per item, before anything ran (:func:`prior_seconds_per_item`): this run folder's
previous evaluations of the same suite (``RUN_DIR/eval/timing.json``, written after each
eval), else, for games, the run's own training rollouts (``metrics.jsonl``: play seconds per
episode, rough: training batches more episodes at once), else unknown until the first wave
of items ends.

Time left while running (:class:`Eta`): the current model's measured seconds per item once a
whole wave (``concurrency`` items, or all of them) has finished; before that the best known
rate (an earlier model of this eval, else the prior) but never less than ``elapsed / wave``
(a prior that promised less is already proven wrong: the first version of this estimator
kept showing the prior's 17 s while the first wave ran for 5 minutes on a loaded machine);
for models not started yet the measured rate of the models already done, else the running
one's. Unknown (None) rather than invented when nothing has been measured and no prior
exists.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spade_async.config import Config
from spade_async.eval.suites.registry import AnswerSuite, EpisodeSuite, Suite
from spade_async.selfplay.play.agent import agent_context_budget

TIMING_FILE = Path("eval") / "timing.json"
"""Relative to the run folder: seconds per item of each suite, from the last eval that scored it."""


@dataclass
class Phase:
    """One model's share of the work: the items it still has to score."""

    label: str
    items: int
    cached: list[str] = field(default_factory=list)
    """Suites whose scores for this model come from the cache."""


class Eta:
    """Seconds left, from what has been measured so far (see the module docstring)."""

    def __init__(
        self,
        phases: Sequence[Phase],
        *,
        concurrency: int,
        prior_s_per_item: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.phases = [p for p in phases if p.items > 0]
        self.concurrency = max(1, concurrency)
        self.prior = prior_s_per_item
        self.clock = clock
        self.done: dict[str, int] = {p.label: 0 for p in self.phases}
        self.started: dict[str, float] = {}
        self.finished: dict[str, float] = {}
        """Label -> seconds the phase took."""

    def update(self, label: str, done: int) -> None:
        now = self.clock()
        self.started.setdefault(label, now)
        self.done[label] = done
        phase = next((p for p in self.phases if p.label == label), None)
        if phase is not None and done >= phase.items and label not in self.finished:
            self.finished[label] = now - self.started[label]

    def measured_rate(self) -> float | None:
        """Seconds per item over the phases already finished."""
        items = sum(p.items for p in self.phases if p.label in self.finished)
        return sum(self.finished.values()) / items if items else None

    def _rate(self, p: Phase) -> float | None:
        """Seconds per item of a running phase: measured once a whole wave of it has ended;
        before that at least ``elapsed / wave`` (the wave has taken that long already, so a
        prior that promised less was wrong), else the best earlier rate."""
        if p.label not in self.started:
            return None
        done = self.done.get(p.label, 0)
        wave = min(self.concurrency, p.items)
        elapsed = self.clock() - self.started[p.label]
        if done >= wave:
            return elapsed / done
        floor = elapsed / wave
        earlier = self.measured_rate() or self.prior
        if earlier is None:
            return floor if done else None
        return max(earlier, floor)

    def remaining(self) -> float | None:
        """Seconds left for everything not scored yet; None when nothing says yet."""
        running = [r for p in self.phases if p.label not in self.finished and (r := self._rate(p)) is not None]
        known = self.measured_rate() or (running[0] if running else None) or self.prior
        total = 0.0
        for p in self.phases:
            if p.label in self.finished:
                continue
            rate = self._rate(p) if p.label in self.started else known
            if rate is None:
                return None
            total += (p.items - self.done.get(p.label, 0)) * rate
        return total

    def items_left(self) -> int:
        return sum(p.items - self.done.get(p.label, 0) for p in self.phases)


def format_seconds(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``42s``; ``unknown`` for None."""
    if seconds is None or math.isnan(seconds):
        return "unknown"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


# -- priors ------------------------------------------------------------------------------------


def load_timing(run_dir: Path | None) -> dict[str, float]:
    if run_dir is None:
        return {}
    try:
        saved = json.loads((run_dir / TIMING_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return (
        {k: float(v) for k, v in saved.items() if isinstance(v, (int, float)) and v > 0}
        if isinstance(saved, dict)
        else {}
    )


def save_timing(run_dir: Path, per_suite: dict[str, float]) -> None:
    """Merge ``per_suite`` (seconds per item) into the run folder's timing file."""
    timing = {**load_timing(run_dir), **{k: v for k, v in per_suite.items() if v > 0 and math.isfinite(v)}}
    path = run_dir / TIMING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(timing, indent=1, sort_keys=True))
    tmp.replace(path)


def training_seconds_per_episode(run_dir: Path | None, cfg: Config) -> float | None:
    """Play seconds per episode of the run's own training steps (``metrics.jsonl``)."""
    if run_dir is None:
        return None
    try:
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return None
    rates = []
    for line in lines:
        try:
            m = json.loads(line)
            episodes = float(m["n_envs"]) * cfg.selfplay.plays
            if m.get("time_play_s") and episodes > 0:
                rates.append(float(m["time_play_s"]) / episodes)
        except (ValueError, KeyError, TypeError):
            continue
    return sum(rates) / len(rates) if rates else None


def prior_seconds_per_item(
    suites: Sequence[Suite], timing: dict[str, float], training_rate: float | None
) -> tuple[float | None, str]:
    """Mean seconds per item of ``suites`` before anything ran, and where it came from."""
    rates = []
    sources = set()
    for s in suites:
        if s.name in timing:
            rates.append(timing[s.name])
            sources.add("this run folder's earlier evals")
        elif s.needs_sandbox and training_rate is not None:
            rates.append(training_rate)
            sources.add("this run's training rollouts (rough)")
        else:
            return None, "no earlier measurement"
    return (sum(rates) / len(rates), " and ".join(sorted(sources))) if rates else (None, "no earlier measurement")


# -- the plan ------------------------------------------------------------------------------------


def suite_line(suite: Suite, n_items: int, cfg: Config) -> str:
    """``games:easy: 6 games x 8 episodes = 48 items (test seeds); an episode: ...``."""
    if isinstance(suite, EpisodeSuite):
        sp, agent = cfg.selfplay, cfg.engine.agent
        budget = agent_context_budget(sp.max_context_tokens, cfg.engine.max_model_len)
        return (
            f"{suite.name}: {len(suite.envs)} games x {suite.episodes} episodes = {n_items} items "
            f"({suite.split} seeds); an episode generates at most {sp.max_turns} turns x "
            f"{agent.max_new_tokens} tokens, its transcript stops at {budget} tokens"
        )
    answer = suite.max_new_tokens if isinstance(suite, AnswerSuite) else None
    tail = f"; an answer is at most {answer} tokens" if answer else ""
    return f"{suite.name}: {n_items} items{tail}"


def plan_lines(
    suite_texts: Sequence[str],
    phases: Sequence[Phase],
    *,
    concurrency: int,
    eta_s: float | None,
    rate_source: str,
    cache_note: str,
) -> list[str]:
    """The plan printed before an evaluation starts."""
    lines = [f"plan: {len(suite_texts)} suite(s), {len(phases)} model(s), {concurrency} items at once"]
    lines += [f"  {t}" for t in suite_texts]
    width = max(len(p.label) for p in phases)
    for p in phases:
        cached = f"; cached: {', '.join(p.cached)}" if p.cached else ""
        lines.append(f"  {p.label:<{width}}  {p.items} items to score{cached}")
    to_score = sum(p.items for p in phases)
    if to_score == 0:
        lines.append("  nothing to score: every figure comes from the cache")
    else:
        lines.append(f"  estimated time: {format_seconds(eta_s)} for {to_score} items ({rate_source})")
    if cache_note:
        lines.append(f"  {cache_note}")
    return lines
