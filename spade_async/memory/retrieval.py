"""Which past environments the designer sees, and which one it mutates.

Why these rules: the designer learns what a good environment is from examples with their
outcomes. An environment whose hint-free win rate ``w`` sits in the target band and whose
hint helps (high regret) is a *model*: learnable now, and solvable with the right idea. One
outside the band is a lesson of what to *avoid*: ``w > high`` is saturated (too easy),
``w < low`` impossible (too hard, or broken). Showing both (contrast) is more informative
than models alone. Examples of the requested skill come first; the rest fill in.

Everything here is a pure function of the candidates and an explicit ``random.Random``, so a
resumed run that restores the RNG makes the same choices.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from spade_async.memory.records import EnvRecord

ExampleKind = Literal["model", "saturated", "impossible"]


@dataclass(frozen=True)
class Example:
    """A past environment shown to the designer, with what it should learn from it."""

    env: EnvRecord
    kind: ExampleKind

    @property
    def is_model(self) -> bool:
        return self.kind == "model"

    @property
    def avoid(self) -> bool:
        return self.kind != "model"

    def describe(self) -> str:
        """One line for the designer prompt."""
        w = self.env.win_rate if self.env.win_rate is not None else float("nan")
        if self.kind == "model":
            hint = self.env.hint_win_rate
            lift = "" if hint is None else f", {hint:.2f} with the hint"
            return f"GOOD: win rate {w:.2f}{lift} (regret {self.env.regret or 0.0:.2f}); aim for this difficulty"
        if self.kind == "saturated":
            return f"AVOID: win rate {w:.2f}, too easy (the agent always wins)"
        return f"AVOID: win rate {w:.2f}, too hard or unwinnable"


def classify(env: EnvRecord, *, low: float, high: float) -> ExampleKind | None:
    """``model`` in the band [low, high], ``saturated`` above, ``impossible`` below; None if unplayed or invalid."""
    if not env.valid or env.status == "invalid" or env.win_rate is None:
        return None
    if env.win_rate > high:
        return "saturated"
    if env.win_rate < low:
        return "impossible"
    return "model"


def _model_score(env: EnvRecord, low: float, high: float) -> float:
    """Regret first; closeness to the band centre breaks near-ties."""
    mid, half = (low + high) / 2, max((high - low) / 2, 1e-9)
    centred = 1.0 - min(abs((env.win_rate or 0.0) - mid) / half, 1.0)
    return (env.regret or 0.0) + 0.1 * centred


def _avoid_score(env: EnvRecord, low: float, high: float) -> float:
    """The further outside the band, the clearer the lesson."""
    w = env.win_rate or 0.0
    return w - high if w > high else low - w


def _take(
    pool: Sequence[EnvRecord],
    n: int,
    *,
    skill: str,
    score: Callable[[EnvRecord], float],
    rng: random.Random,
    tolerance: float = 0.1,
) -> list[EnvRecord]:
    """Up to ``n`` from ``pool``, same skill first.

    Within a tier, ``rng`` samples among the near-best: at most ``2n`` environments scoring no
    less than the ``n``-th best minus ``tolerance``. Clear winners are always taken; near-ties
    rotate between designs.
    """
    chosen: list[EnvRecord] = []
    for tier in ([e for e in pool if e.skill == skill], [e for e in pool if e.skill != skill]):
        need = min(n - len(chosen), len(tier))
        if need <= 0:
            continue
        ranked = sorted(tier, key=lambda e: (-score(e), -e.created_step))
        cutoff = score(ranked[need - 1]) - tolerance
        shortlist = [e for e in ranked[: 2 * need] if score(e) >= cutoff]
        picked = set(rng.sample(range(len(shortlist)), need))
        chosen.extend(e for i, e in enumerate(shortlist) if i in picked)
    return chosen


def select_examples(
    candidates: Sequence[EnvRecord],
    k: int,
    *,
    skill: str,
    low: float,
    high: float,
    rng: random.Random,
    min_regret: float = 0.0,
) -> list[Example]:
    """Up to ``k`` examples: models (in band, regret >= ``min_regret``) first, then things to avoid.

    With ``k >= 2`` about a third (at least one) are things to avoid when there are any; a
    shortfall in either kind is filled from the other. Same-skill environments are preferred;
    among near-ties ``rng`` picks, so prompts vary between designs.
    """
    if k <= 0:
        return []
    seen: set[str] = set()
    models: list[EnvRecord] = []
    avoid: list[EnvRecord] = []
    for env in candidates:
        kind = classify(env, low=low, high=high)
        if kind is None or env.id in seen:
            continue
        seen.add(env.id)
        if kind == "model":
            if (env.regret or 0.0) >= min_regret:
                models.append(env)
        else:
            avoid.append(env)

    n_avoid = min(len(avoid), max(1, k // 3) if k >= 2 else 0)
    n_models = min(len(models), k - n_avoid)
    n_avoid = min(len(avoid), k - n_models)  # fill a shortfall of models
    chosen_models = _take(models, n_models, skill=skill, score=lambda e: _model_score(e, low, high), rng=rng)
    chosen_avoid = _take(avoid, n_avoid, skill=skill, score=lambda e: _avoid_score(e, low, high), rng=rng)
    return [Example(e, "model") for e in chosen_models] + [
        Example(e, classify(e, low=low, high=high) or "impossible") for e in chosen_avoid
    ]


def pick_parent(
    candidates: Sequence[EnvRecord],
    *,
    skill: str,
    low: float,
    high: float,
    rng: random.Random,
    top_n: int = 3,
) -> EnvRecord | None:
    """The environment to mutate: one of the ``top_n`` best in-band ones (by regret), same skill if any.

    Sampling among the top few (not always the single best) keeps one strong parent from
    taking over the population. None when nothing is in band: design fresh instead.
    """
    in_band = [e for e in candidates if classify(e, low=low, high=high) == "model"]
    same = [e for e in in_band if e.skill == skill]
    pool = same or in_band
    if not pool:
        return None
    ranked = sorted(pool, key=lambda e: (-_model_score(e, low, high), -e.created_step))
    return rng.choice(ranked[: max(1, top_n)])


def prune_memory(candidates: Sequence[EnvRecord], size: int) -> list[EnvRecord]:
    """Keep at most ``size`` environments, newest first, taken round-robin across skills.

    Skills are drawn a few at a time, so plain recency would let the latest skills push the
    others out of memory; round-robin keeps every skill's newest environments.
    """
    by_skill: dict[str | None, list[EnvRecord]] = {}
    for env in sorted(candidates, key=lambda e: -e.created_step):
        by_skill.setdefault(env.skill, []).append(env)
    queues = list(by_skill.values())
    kept: list[EnvRecord] = []
    depth = 0
    while len(kept) < size and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(kept) < size:
                kept.append(queue[depth])
        depth += 1
    return sorted(kept, key=lambda e: -e.created_step)
