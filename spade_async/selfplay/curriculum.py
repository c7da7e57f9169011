"""Curriculum state: skill rotation, the live environments, and delayed designer scoring.

Why one object: everything a resumed run needs to continue the *same* curriculum lives here
(the RNG, the skill cycle, the live environments with their per-step outcomes, the designs
awaiting their score) and round-trips through ``state()`` / ``load_state()``. A checkpoint
that restored the learner but not this would silently restart the curriculum.

Designer scoring (docs/rewards.md): an environment lives for k steps; when it retires, its
hint-free win rate ``w`` is the mean plain outcome over its life and its regret compares
hinted and plain means over the steps where both arms were played (matched timing: by
default only the step it went live, see ``selfplay.hinted_schedule``). The designs of one
generation are scored together, so the per-skill centring sees the whole batch. Every
design of the generation gets exactly one designer sample; it is scored as *invalid* (the
fixed penalty) when:

- it failed validation (or was a duplicate, see ``generation``);
- its first attempt failed validation and a repair turn fixed it: the trained tokens are
  the first attempt's, which were broken (the repaired environment is still played and
  kept in memory);
- more than ``max_play_error_share`` of its plays errored (crash, hang, bad reply), or no
  play finished at all. Below that share it is scored on the plays that finished.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any

from spade_async.config import SelfPlayConfig
from spade_async.rewards import (
    DesignerCandidate,
    DesignerRewardParams,
    designer_rewards,
    hint_regret,
)
from spade_async.samples import TrainSample
from spade_async.selfplay.designer import Design


@dataclass
class LiveEnv:
    """An environment being played, with its outcomes per step."""

    env_id: str
    code: str
    hint: str | None
    skill: str
    origin: str
    born_step: int
    design: Design | None = None
    """Set when this generation's designer wrote it (so it earns a designer reward)."""
    plain: dict[int, list[float]] = field(default_factory=dict)
    hinted: dict[int, list[float]] = field(default_factory=dict)
    errors: int = 0
    """Plays of this environment that errored (crash, hang, protocol violation)."""

    def n_plays(self) -> int:
        return sum(len(v) for v in self.plain.values()) + sum(len(v) for v in self.hinted.values())

    def error_share(self) -> float:
        """Share of this environment's plays that errored (0.0 before any play)."""
        total = self.errors + self.n_plays()
        return self.errors / total if total else 0.0

    def win_rate(self) -> float | None:
        outcomes = [o for step in self.plain.values() for o in step]
        return statistics.fmean(outcomes) if outcomes else None

    def hint_win_rate(self) -> float | None:
        outcomes = [o for step in self.hinted.values() for o in step]
        return statistics.fmean(outcomes) if outcomes else None

    def matched_means(self) -> tuple[float | None, float | None]:
        """(R_hint, R_plain): mean per-step outcomes over the steps where both arms were played."""
        steps = [s for s in self.plain if self.plain[s] and self.hinted.get(s)]
        if not steps:
            return None, None
        r_hint = statistics.fmean(statistics.fmean(self.hinted[s]) for s in steps)
        r_plain = statistics.fmean(statistics.fmean(self.plain[s]) for s in steps)
        return r_hint, r_plain

    def regret(self, scale: float) -> float | None:
        r_hint, r_plain = self.matched_means()
        return None if r_hint is None or r_plain is None else hint_regret(r_hint, r_plain, scale)

    def candidate(self) -> DesignerCandidate:
        r_hint, r_plain = self.matched_means()
        return DesignerCandidate(self.skill, True, win_rate=self.win_rate(), r_hint=r_hint, r_plain=r_plain)


@dataclass(frozen=True)
class ScoredDesign:
    """One design of a retiring generation, paired with what it is scored as."""

    design: Design
    candidate: DesignerCandidate
    env_id: str | None
    """The live environment it became (None when it was rejected)."""
    why_invalid: str | None = None
    """Why an admitted design is nevertheless scored as invalid (None otherwise)."""
    env_candidate: DesignerCandidate | None = None
    """What the environment itself is scored as, when that differs from ``candidate``: a
    repaired design's trained (first, broken) attempt gets the penalty, while the repaired
    environment earns its own score (stored on its row)."""


@dataclass
class Retired:
    """What retiring a generation produces."""

    envs: list[LiveEnv]
    designer_samples: list[TrainSample]
    designer_rewards: dict[str, float]
    """What each admitted design's environment earned, per env id (for a repaired design: the
    environment's own score, not its first attempt's penalty, which is the trained sample's)."""
    scored: list[ScoredDesign] = field(default_factory=list)


class Curriculum:
    """Skill rotation + live environments + pending designs, with exact save/restore."""

    def __init__(self, cfg: SelfPlayConfig, seed: int, designer_temperature: float, n_agent_samples_per_env: int) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.designer_temperature = designer_temperature
        self.n_agent_samples_per_env = n_agent_samples_per_env
        self.skill_cycle: list[str] = []
        self.live: list[LiveEnv] = []
        self.rejected: list[Design] = []
        self.generation = 0

    def needs_regen(self, step: int) -> bool:
        return not self.live or step % self.cfg.regen_every == 0

    def next_skills(self) -> list[str]:
        """``skills_per_regen`` skills from a shuffled cycle (every skill once per cycle)."""
        out: list[str] = []
        while len(out) < self.cfg.skills_per_regen:
            if not self.skill_cycle:
                self.skill_cycle = list(self.cfg.skills)
                self.rng.shuffle(self.skill_cycle)
            skill = self.skill_cycle.pop()
            if skill not in out or len(self.cfg.skills) < self.cfg.skills_per_regen:
                out.append(skill)
        return out

    def record(self, step: int, env_id: str, hinted: bool, outcome: float) -> None:
        for env in self.live:
            if env.env_id == env_id:
                arm = env.hinted if hinted else env.plain
                arm.setdefault(step, []).append(outcome)
                return

    def record_error(self, env_id: str) -> None:
        """Count a play of ``env_id`` that errored (it has no outcome)."""
        for env in self.live:
            if env.env_id == env_id:
                env.errors += 1
                return

    def score_design(self, env: LiveEnv) -> ScoredDesign:
        """What an admitted design is scored as (see the module docstring)."""
        assert env.design is not None
        skill = env.design.job.skill
        why: str | None = None
        if env.win_rate() is None:
            why = "no play of it finished"
        elif env.error_share() > self.cfg.max_play_error_share:
            why = f"{env.error_share():.0%} of its plays errored (max {self.cfg.max_play_error_share:.0%})"
        played = DesignerCandidate(skill, False) if why else env.candidate()
        if env.design.attempts > 1:
            first = "its first attempt failed validation (admitted after a repair turn)"
            return ScoredDesign(env.design, DesignerCandidate(skill, False), env.env_id,
                                f"{first}; {why}" if why else first, env_candidate=played)
        return ScoredDesign(env.design, played, env.env_id, why)

    def retire(self) -> Retired:
        """End the current generation: score its designs and clear the live set.

        Every design of the generation (admitted or not) yields one scored record, so none
        drops out of the designer batch.
        """
        scored = [self.score_design(e) for e in self.live if e.design is not None]
        scored += [ScoredDesign(d, DesignerCandidate(d.job.skill, False), None) for d in self.rejected]
        def rewards_of(candidates: list[DesignerCandidate]) -> list[float]:
            return designer_rewards(
                candidates,
                DesignerRewardParams.from_config(self.cfg),
                n_agent_samples=self.n_agent_samples_per_env * max(1, len(self.live)),
                n_envs=max(1, len(self.live)),
            )

        rewards = rewards_of([s.candidate for s in scored])
        # What each environment earned (stored on its row): a repaired design's environment is
        # scored as played, in the same batch, while its trained first attempt keeps the penalty.
        env_rewards = rewards
        if any(s.env_candidate is not None for s in scored):
            env_rewards = rewards_of([s.env_candidate or s.candidate for s in scored])
        samples = []
        per_env: dict[str, float] = {}
        for s, r, earned in zip(scored, rewards, env_rewards, strict=True):
            if s.design.completion.token_ids:
                sample = s.design.to_sample(advantage=r, temperature=self.designer_temperature, reward=r)
                sample.meta["env_id"] = s.env_id
                samples.append(sample)
            if s.env_id is not None:
                per_env[s.env_id] = earned
        retired = Retired(envs=self.live, designer_samples=samples, designer_rewards=per_env, scored=scored)
        self.live = []
        self.rejected = []
        self.generation += 1
        return retired

    # -- checkpointing ------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "rng": self.rng.getstate(),
            "skill_cycle": list(self.skill_cycle),
            "live": self.live,
            "rejected": self.rejected,
            "generation": self.generation,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.rng.setstate(state["rng"])
        self.skill_cycle = list(state["skill_cycle"])
        self.live = list(state["live"])
        self.rejected = list(state["rejected"])
        self.generation = int(state["generation"])
