"""Agent outcome, hint regret, the plateau anchor and the designer reward: pure functions.

Why pure and separate: these few lines decide what the policy learns, and a sign error
here trains confidently in the wrong direction. Kept free of I/O, config objects and
torch, each piece is checked on its own (doctests below, property tests in
``tests/unit/test_rewards.py``) and the orchestrator only composes them.

Formulas follow the SPADE paper (docs/rewards.md lists them with every deviation). Decisions and deviations:

- ``episode_outcome``: when an env sets *both* ``terminated`` and ``truncated`` (common
  in generated code that flags the last turn as truncated even when the answer on it
  ended the game), ``terminated`` wins and the step's reward counts. Only a step that is
  truncated *instead of* terminating scores 0. A non-finite reward raises (the sandbox
  rejects those before they get here).
- ``designer_rewards``: a candidate that failed validation, hung or crashed gets the fixed
  ``invalid_penalty`` as its *raw* reward and takes part in the per-skill centring like
  any other candidate, then everything is scaled. So within a skill a broken environment
  always ranks below every working one (raw rewards of working ones are >= 0 > penalty),
  and the penalty weighs as much as the regret/plateau signal after scaling. The cost:
  when *every* candidate of a skill is invalid, centring leaves them all at 0 (no
  contrast, as in any group-relative baseline). Set ``center_invalid=False`` to keep the
  penalty outside the centring instead (invalid: ``penalty * scale``; valid: centred over
  the valid ones only); that always punishes broken code but lets a poor working
  environment score below a broken one.
- A valid candidate without hinted plays (H = 0, or no matched step yet) has regret 0.
- ``graded_invalid`` (a switch, off by default as in the paper): an invalid candidate's raw
  reward is ``invalid_penalty * (1 - stage / n_stages)`` (:func:`graded_invalid_reward`), its
  ``stage`` being how far it got through admission (``selfplay.design.progress``). A design
  that got further earns more, so a group where no design is admitted still has a gradient
  (with the flat penalty centring leaves it all zeros). Every graded reward stays below 0, so
  below every valid one (raw >= 0): admitted designs' rewards are unchanged.
- ``designer_advantage`` (a switch, ``signed`` by default as in the paper): what the designer
  is trained with. ``positive``: ``max(0, reward)``, only the designs that did better than
  their group; ``admitted``: the same for admitted designs, 0 for every other one. The
  reward itself (stored, shown, centred) is unchanged. Why: two completions of one design
  prompt share most of their tokens (the class skeleton, the imports, ``reset``/``step``),
  and a negative advantage on a failed design pushes those shared, already likely tokens
  down; a 135M policy then answers with loops and code that does not parse. With graded
  invalid rewards the better of two broken designs still has a positive advantage, so
  ``positive`` pulls broken code up; ``admitted`` is rejection-sampling fine-tuning weighted
  by the centred reward (RAFT, ReST), the objective the warm start itself has. Measured:
  docs/rewards.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def _clip(x: float, low: float, high: float) -> float:
    return max(low, min(high, x))


def episode_outcome(final_reward: float, terminated: bool, truncated: bool) -> float:
    """The agent's return: the terminating step's reward clipped to [-1, 1], else 0.

    >>> episode_outcome(1.0, True, False)
    1.0
    >>> episode_outcome(0.7, False, True)   # ran out of turns: no credit
    0.0
    >>> episode_outcome(3.0, True, False)
    1.0
    """
    if not math.isfinite(final_reward):
        raise ValueError(f"non-finite episode reward {final_reward!r}")
    if not terminated:
        return 0.0
    return _clip(float(final_reward), -1.0, 1.0)


def win_rate(outcomes: Sequence[float]) -> float:
    """Mean outcome of a set of plays (the designer reward's ``w``: partial outcomes count partially).

    >>> win_rate([1.0, 0.0, 0.5, 0.5])
    0.5
    """
    if not outcomes:
        raise ValueError("win_rate of no plays is undefined")
    return math.fsum(outcomes) / len(outcomes)


def hint_regret(r_hint: float, r_plain: float, scale: float) -> float:
    """``clip((R_hint - R_plain) / scale, 0, 1)``: how much the hint helps, saturating at ``scale``.

    >>> hint_regret(0.6, 0.5, 0.15)  # doctest: +ELLIPSIS
    0.666...
    >>> hint_regret(0.2, 0.5, 0.15)
    0.0
    """
    if scale <= 0:
        raise ValueError(f"regret scale must be positive, got {scale}")
    return _clip((r_hint - r_plain) / scale, 0.0, 1.0)


def plateau(w: float, low: float, high: float, ramp: float) -> float:
    """1 on ``[low, high]``, falling linearly to 0 over ``ramp`` either side, 0 beyond.

    >>> plateau(0.5, 0.4, 0.6, 0.25)
    1.0
    >>> round(plateau(0.3, 0.4, 0.6, 0.25), 6)
    0.6
    >>> plateau(0.95, 0.4, 0.6, 0.25)
    0.0
    """
    if ramp <= 0:
        raise ValueError(f"plateau ramp must be positive, got {ramp}")
    if low > high:
        raise ValueError(f"plateau band is empty: low {low} > high {high}")
    if w < low:
        return max(0.0, 1.0 - (low - w) / ramp)
    if w > high:
        return max(0.0, 1.0 - (w - high) / ramp)
    return 1.0


def designer_raw_reward(regret: float, plateau: float, w_regret: float, w_plateau: float) -> float:
    """``w_regret * regret + w_plateau * plateau`` (the paper: 0.4 and 0.6).

    >>> round(designer_raw_reward(0.5, 1.0, 0.4, 0.6), 6)
    0.8
    """
    return w_regret * regret + w_plateau * plateau


def center_per_skill(rewards: Sequence[float], skills: Sequence[str]) -> list[float]:
    """Subtract from each reward the mean reward of its skill in the batch (no std division).

    >>> center_per_skill([1.0, 0.0, 0.5], ["a", "a", "b"])
    [0.5, -0.5, 0.0]
    """
    if len(rewards) != len(skills):
        raise ValueError(f"{len(rewards)} rewards but {len(skills)} skills")
    groups: dict[str, list[float]] = {}
    for reward, skill in zip(rewards, skills, strict=True):
        groups.setdefault(skill, []).append(reward)
    means = {skill: math.fsum(values) / len(values) for skill, values in groups.items()}
    return [reward - means[skill] for reward, skill in zip(rewards, skills, strict=True)]


def designer_scale(n_agent_samples: int, n_envs: int, k: int, cap: float) -> float:
    """``min(n_agent_samples / n_envs * k, cap)``: weighs the designer's one sample per
    environment per k steps against the many agent samples each environment yields.

    >>> designer_scale(384, 24, 4, 50.0)
    50.0
    >>> designer_scale(32, 4, 2, 50.0)
    16.0
    """
    if n_envs <= 0:
        raise ValueError(f"n_envs must be positive, got {n_envs}")
    return min(n_agent_samples / n_envs * k, cap)


@dataclass(frozen=True)
class DesignerCandidate:
    """What the designer reward needs to know about one generated environment.

    ``win_rate``: hint-free mean outcome over the environment's life (required when valid).
    ``r_hint`` / ``r_plain``: mean outcomes of the hinted and plain plays made at the same
    steps (matched timing); ``None`` when there were no hinted plays.
    """

    skill: str
    valid: bool
    win_rate: float | None = None
    r_hint: float | None = None
    r_plain: float | None = None
    stage: int = 0
    """For an invalid candidate: the admission stage it stopped on (0 = no code at all; see
    ``selfplay.design.progress``); read only with ``graded_invalid``."""
    group: str | None = None
    """The centring group when it is not the skill: the prompt whose completions it is
    compared with (``selfplay.design_samples`` > 1)."""

    @property
    def centring_key(self) -> str:
        """What the batch is centred by: ``group`` when set, else the skill (the paper)."""
        return self.group if self.group is not None else self.skill


@dataclass(frozen=True)
class DesignerRewardParams:
    """The constants of the designer reward; defaults are the paper's."""

    regret_scale: float = 0.15
    plateau_low: float = 0.4
    plateau_high: float = 0.6
    plateau_ramp: float = 0.25
    regret_weight: float = 0.4
    plateau_weight: float = 0.6
    invalid_penalty: float = -0.5
    scale_cap: float = 50.0
    k: int = 4
    center_invalid: bool = True
    graded_invalid: bool = False
    n_stages: int = 7

    @classmethod
    def from_config(cls, selfplay: Any) -> DesignerRewardParams:
        """From a ``SelfPlayConfig`` (duck-typed, so this module never imports pydantic)."""
        return cls(
            regret_scale=selfplay.regret_scale,
            plateau_low=selfplay.plateau_low,
            plateau_high=selfplay.plateau_high,
            plateau_ramp=selfplay.plateau_ramp,
            regret_weight=selfplay.regret_weight,
            plateau_weight=selfplay.plateau_weight,
            invalid_penalty=selfplay.invalid_penalty,
            scale_cap=selfplay.designer_scale_cap,
            k=selfplay.regen_every,
            graded_invalid=selfplay.graded_invalid,
        )


def graded_invalid_reward(stage: int, n_stages: int, penalty: float) -> float:
    """``penalty * (1 - stage / n_stages)``: the penalty for no code at all (stage 0), rising
    linearly with each admission stage passed, and still below 0 at the last (``n_stages - 1``).

    >>> graded_invalid_reward(0, 7, -0.5)
    -0.5
    >>> round(graded_invalid_reward(6, 7, -0.5), 6)
    -0.071429
    """
    if not 0 <= stage < n_stages:
        raise ValueError(f"an invalid design's stage must lie in [0, {n_stages}), got {stage}")
    return penalty * (1.0 - stage / n_stages)


def candidate_raw_reward(candidate: DesignerCandidate, params: DesignerRewardParams) -> float:
    """Raw (uncentred, unscaled) reward of one candidate; the penalty when it is invalid
    (graded by its admission stage with ``graded_invalid``)."""
    if not candidate.valid:
        if params.graded_invalid:
            return graded_invalid_reward(candidate.stage, params.n_stages, params.invalid_penalty)
        return params.invalid_penalty
    if candidate.win_rate is None:
        raise ValueError(f"valid {candidate.skill!r} candidate has no win rate")
    regret = 0.0
    if candidate.r_hint is not None and candidate.r_plain is not None:
        regret = hint_regret(candidate.r_hint, candidate.r_plain, params.regret_scale)
    anchor = plateau(candidate.win_rate, params.plateau_low, params.plateau_high, params.plateau_ramp)
    return designer_raw_reward(regret, anchor, params.regret_weight, params.plateau_weight)


DESIGNER_ADVANTAGES = ("signed", "positive", "admitted")


def designer_advantage(reward: float, admitted: bool, mode: str) -> float:
    """The advantage a design is trained with (``mode``: one of :data:`DESIGNER_ADVANTAGES`).

    >>> designer_advantage(-0.3, False, "signed")
    -0.3
    >>> designer_advantage(-0.3, True, "positive")
    0.0
    >>> designer_advantage(0.2, False, "positive"), designer_advantage(0.2, False, "admitted")
    (0.2, 0.0)
    >>> designer_advantage(0.7, True, "admitted")
    0.7
    """
    if mode == "signed":
        return reward
    if mode == "positive":
        return max(0.0, reward)
    if mode == "admitted":
        return max(0.0, reward) if admitted else 0.0
    raise ValueError(f"unknown designer advantage {mode!r}; choose from {DESIGNER_ADVANTAGES}")


def designer_rewards(
    candidates: Sequence[DesignerCandidate],
    params: DesignerRewardParams,
    n_agent_samples: int,
    n_envs: int,
) -> list[float]:
    """Final designer rewards of one batch, in order: raw, centred per skill (or per prompt
    group, ``DesignerCandidate.group``), scaled.

    See the module docstring for how invalid candidates are treated.

    >>> p = DesignerRewardParams(scale_cap=1.0)
    >>> batch = [DesignerCandidate("Optimization", True, win_rate=0.5, r_hint=0.5, r_plain=0.5),
    ...          DesignerCandidate("Optimization", False)]
    >>> [round(r, 6) for r in designer_rewards(batch, p, n_agent_samples=32, n_envs=2)]
    [0.55, -0.55]
    """
    if not candidates:
        return []
    raw = [candidate_raw_reward(c, params) for c in candidates]
    scale = designer_scale(n_agent_samples, n_envs, params.k, params.scale_cap)
    skills = [c.centring_key for c in candidates]
    if params.center_invalid:
        return [r * scale for r in center_per_skill(raw, skills)]
    valid = [i for i, c in enumerate(candidates) if c.valid]
    centred = center_per_skill([raw[i] for i in valid], [skills[i] for i in valid])
    out = [r * scale for r in raw]  # invalid: their (flat or graded) penalty
    for i, value in zip(valid, centred, strict=True):
        out[i] = value * scale
    return out
