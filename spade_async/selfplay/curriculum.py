"""Curriculum state: skill rotation, the live environments, and delayed designer scoring.

Why one object: everything a resumed run needs to continue the *same* curriculum lives here
(the RNGs, the skill cycle, the live environments with their per-step outcomes, the designs
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
  play finished at all. Below that share it is scored on the plays that finished;
- it failed the play audit (``selfplay.audit``: a meaningless action won in play, or play
  departed from what admission saw): it is expelled from the live set at once, its plays of
  that step are dropped, and it is scored as invalid when its generation retires.

Steering (``selfplay.steering`` applies the actions; their effect lives here, so a checkpoint
carries it): an environment retired by hand leaves the live set at once and waits in
``retired_early`` to be scored with its generation over the steps it lived, like a natural
retirement, and memory never refills it (``retired_by_hand``, until it is pinned); a pinned one is carried into every next generation (its design is scored once,
with the generation it was designed in); one added by hand at a step that regenerates joins
the new generation (``joining``); ``design_share`` scales the designs per
generation (0: the designer pauses and memory fills the live set); ``band`` replaces the
config's target band for the rest of the run.

Two RNGs: ``design_rng`` draws what each design prompt asks for (the skills, fresh or
mutation, the parent, the examples, the change) and nothing else, so the prompts of a run
depend on its seed only, not on the verdicts or on how rejected designs were replaced; runs
that differ in a setting then write from the same prompts (a paired comparison, see
``benchmarks/designer_paired.py``). ``rng`` draws everything else (the memory fill, fixed-mode picks).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from spade_async.admission.validate import Promise
from spade_async.config import SelfPlayConfig
from spade_async.learner.samples import TrainSample
from spade_async.selfplay.design.designer import Design
from spade_async.selfplay.design.progress import N_STAGES
from spade_async.selfplay.rewards import (
    DesignerCandidate,
    DesignerRewardParams,
    designer_advantage,
    designer_rewards,
    hint_regret,
)


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
    expelled: str | None = None
    """Why the play audit retired it early (None while it is honest)."""

    def promise(self) -> Promise | None:
        """What admission saw, for the play audit (None for seeds and memory environments)."""
        validation = self.design.validation if self.design is not None else None
        return validation.promise if validation is not None else None

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
        group = self.design.group if self.design is not None else None
        return DesignerCandidate(
            self.skill, True, win_rate=self.win_rate(), r_hint=r_hint, r_plain=r_plain, group=group
        )


LATER_CHECK = N_STAGES - 1
"""The stage of a design admitted but scored invalid (audit, errors, a failed first attempt's
later check): the highest rung below admission."""


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


def design_stream_seed(seed: int) -> str:
    """The seed of a run's design-prompt stream: its own, apart from ``random.Random(seed)``.

    >>> random.Random(design_stream_seed(0)).random() == random.Random(0).random()
    False
    """
    return f"design prompts {seed}"


class Curriculum:
    """Skill rotation + live environments + pending designs, with exact save/restore."""

    def __init__(
        self, cfg: SelfPlayConfig, seed: int, designer_temperature: float, n_agent_samples_per_env: int
    ) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.design_rng = random.Random(design_stream_seed(seed))
        """The design prompts' own stream (see the module docstring)."""
        self.designer_temperature = designer_temperature
        self.n_agent_samples_per_env = n_agent_samples_per_env
        self.skill_cycle: list[str] = []
        self.live: list[LiveEnv] = []
        self.rejected: list[Design] = []
        self.expelled: list[LiveEnv] = []
        self.generation = 0
        # Steering state (see the module docstring); defaults = not steered.
        self.pinned: set[str] = set()
        self.retired_early: list[LiveEnv] = []
        self.design_share = 1.0
        self.band: tuple[float, float] | None = None
        self.retired_by_hand: set[str] = set()
        """Environments retired by a steering request: never refilled from memory (a pin undoes it)."""
        self.joining: list[LiveEnv] = []
        """Environments added by hand at a step that regenerates: they join the new generation."""

    def join(self, env: LiveEnv, step: int) -> None:
        """Add an environment by hand, live from ``step`` (into the next generation when
        ``step`` regenerates, so the regeneration does not retire it before it is played)."""
        (self.joining if self.needs_regen(step) else self.live).append(env)

    def designs_wanted(self, envs_per_step: int) -> int:
        """Designs to ask for at a regeneration: ``envs_per_step`` scaled by ``design_share``."""
        return round(envs_per_step * self.design_share)

    def set_band(self, low: float, high: float) -> None:
        """Make [low, high] the target band for the rest of the run (``cfg`` is shared with
        every stage, so rewards, memory picks and band metrics all use it)."""
        self.band = (low, high)
        if low > self.cfg.plateau_high:  # assign in an order that keeps low <= high throughout
            self.cfg.plateau_high = high
            self.cfg.plateau_low = low
        else:
            self.cfg.plateau_low = low
            self.cfg.plateau_high = high

    def retire_now(self, env_id: str) -> LiveEnv | None:
        """Take ``env_id`` out of the live set now (None if it is not live); a design of this
        generation is scored when the generation ends, over the steps it lived."""
        for group in (self.live, self.joining):
            for i, env in enumerate(group):
                if env.env_id == env_id:
                    del group[i]
                    self.pinned.discard(env_id)
                    self.retired_by_hand.add(env_id)
                    if env.design is not None:
                        self.retired_early.append(env)
                    return env
        return None

    def has_generation(self) -> bool:
        """Whether there is a generation to retire (live, all of it retired by hand, or
        environments waiting to join the next one)."""
        return bool(self.live or self.retired_early or self.joining)

    def needs_regen(self, step: int) -> bool:
        return not self.live or step % self.cfg.regen_every == 0

    def next_skills(self) -> list[str]:
        """``skills_per_regen`` skills from a shuffled cycle (every skill once per cycle)."""
        out: list[str] = []
        while len(out) < self.cfg.skills_per_regen:
            if not self.skill_cycle:
                self.skill_cycle = list(self.cfg.skills)
                self.design_rng.shuffle(self.skill_cycle)
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

    def expel(self, env_id: str, reason: str) -> LiveEnv | None:
        """Take ``env_id`` out of the live set for failing the play audit (scored invalid at retirement).

        The audit outranks a pin: an expelled environment is unpinned, so it is neither carried
        into the next generation nor stored as 'active' (memory would bring it back)."""
        for env in self.live:
            if env.env_id == env_id:
                self.live.remove(env)
                self.pinned.discard(env_id)
                env.expelled = reason
                self.expelled.append(env)
                return env
        return None

    def score_design(self, env: LiveEnv) -> ScoredDesign:
        """What an admitted design is scored as (see the module docstring)."""
        assert env.design is not None
        skill, group = env.design.job.skill, env.design.group
        why: str | None = None
        if env.expelled:
            why = f"it failed the play audit: {env.expelled}"
        elif env.win_rate() is None:
            why = "no play of it finished"
        elif env.error_share() > self.cfg.max_play_error_share:
            why = f"{env.error_share():.0%} of its plays errored (max {self.cfg.max_play_error_share:.0%})"
        played = DesignerCandidate(skill, False, stage=LATER_CHECK, group=group) if why else env.candidate()
        if env.design.attempts > 1:
            first = "its first attempt failed validation (admitted after a repair turn)"
            return ScoredDesign(
                env.design,
                DesignerCandidate(skill, False, stage=min(env.design.first_stage, LATER_CHECK), group=group),
                env.env_id,
                f"{first}; {why}" if why else first,
                env_candidate=played,
            )
        return ScoredDesign(env.design, played, env.env_id, why)

    def retire(self) -> Retired:
        """End the current generation: score its designs and clear the live set (pinned
        environments stay in it).

        Every design of the generation (admitted or not) yields one scored record, so none
        drops out of the designer batch.
        """
        generation = self.live + self.retired_early + self.expelled
        scored = [self.score_design(e) for e in generation if e.design is not None]
        scored += [
            ScoredDesign(
                d, DesignerCandidate(d.job.skill, False, stage=min(d.first_stage, LATER_CHECK), group=d.group), None
            )
            for d in self.rejected
        ]

        def rewards_of(candidates: list[DesignerCandidate]) -> list[float]:
            return designer_rewards(
                candidates,
                DesignerRewardParams.from_config(self.cfg),
                n_agent_samples=self.n_agent_samples_per_env * max(1, len(generation)),
                n_envs=max(1, len(generation)),
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
                advantage = designer_advantage(r, s.candidate.valid, self.cfg.designer_advantage)
                sample = s.design.to_sample(advantage=advantage, temperature=self.designer_temperature, reward=r)
                sample.meta["env_id"] = s.env_id
                samples.append(sample)
            if s.env_id is not None:
                per_env[s.env_id] = earned
        retired = Retired(envs=generation, designer_samples=samples, designer_rewards=per_env, scored=scored)
        # Pinned environments go on into the next generation, their design already scored.
        self.live = [replace(e, design=None) for e in self.live if e.env_id in self.pinned] + self.joining
        self.retired_early = []
        self.joining = []
        self.rejected = []
        self.expelled = []
        self.generation += 1
        return retired

    # -- checkpointing ------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "rng": self.rng.getstate(),
            "design_rng": self.design_rng.getstate(),
            "skill_cycle": list(self.skill_cycle),
            "live": self.live,
            "rejected": self.rejected,
            "expelled": self.expelled,
            "generation": self.generation,
            "steering": {
                "pinned": sorted(self.pinned),
                "retired_early": self.retired_early,
                "design_share": self.design_share,
                "band": self.band,
                "joining": self.joining,
                "retired_by_hand": sorted(self.retired_by_hand),
            },
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.rng.setstate(state["rng"])
        if "design_rng" in state:  # absent from checkpoints before it: the stream starts again from the seed
            self.design_rng.setstate(state["design_rng"])
        self.skill_cycle = list(state["skill_cycle"])
        self.live = list(state["live"])
        self.rejected = list(state["rejected"])
        self.expelled = list(state.get("expelled", []))  # absent from checkpoints written before the audit
        self.generation = int(state["generation"])
        steering = state.get("steering", {})  # absent in checkpoints from before steering
        self.pinned = set(steering.get("pinned", ()))
        self.retired_early = list(steering.get("retired_early", ()))
        self.design_share = float(steering.get("design_share", 1.0))
        self.joining = list(steering.get("joining", ()))
        self.retired_by_hand = set(steering.get("retired_by_hand", ()))
        self.band = None
        if steering.get("band") is not None:
            low, high = steering["band"]
            self.set_band(float(low), float(high))
