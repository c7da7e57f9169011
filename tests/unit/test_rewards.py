"""Reward math: the documented examples, band edges, and properties that must hold for any input."""

from __future__ import annotations

import doctest
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_async.config import SelfPlayConfig
from spade_async.selfplay import rewards
from spade_async.selfplay.rewards import (
    DesignerCandidate,
    DesignerRewardParams,
    candidate_raw_reward,
    center_per_skill,
    designer_raw_reward,
    designer_rewards,
    designer_scale,
    episode_outcome,
    hint_regret,
    plateau,
    win_rate,
)

unit = st.floats(0.0, 1.0, allow_nan=False)
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
SKILL_NAMES = st.sampled_from(["Optimization", "Causal Inference", "Spatial Reasoning"])


def test_doctests() -> None:
    assert doctest.testmod(rewards).failed == 0


# --- episode_outcome ---


def test_outcome_truncated_scores_zero_whatever_the_reward() -> None:
    assert episode_outcome(1.0, terminated=False, truncated=True) == 0.0
    assert episode_outcome(0.4, terminated=False, truncated=False) == 0.0


def test_outcome_terminated_wins_over_truncated() -> None:
    assert episode_outcome(1.0, terminated=True, truncated=True) == 1.0


def test_outcome_clips() -> None:
    assert episode_outcome(-7.0, True, False) == -1.0
    assert episode_outcome(0.25, True, False) == 0.25


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_outcome_rejects_non_finite(bad: float) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        episode_outcome(bad, True, False)


@given(finite, st.booleans(), st.booleans())
def test_outcome_bounded(r: float, terminated: bool, truncated: bool) -> None:
    out = episode_outcome(r, terminated, truncated)
    assert -1.0 <= out <= 1.0
    if not terminated:
        assert out == 0.0


# --- win_rate ---


def test_win_rate_mean_and_empty() -> None:
    assert win_rate([1.0, 1.0, 0.0, 0.0]) == 0.5
    with pytest.raises(ValueError):
        win_rate([])


@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=64))
def test_win_rate_within_outcome_range(outcomes: list[float]) -> None:
    assert min(outcomes) - 1e-12 <= win_rate(outcomes) <= max(outcomes) + 1e-12


# --- hint_regret ---


def test_regret_examples() -> None:
    assert hint_regret(0.65, 0.5, 0.15) == pytest.approx(1.0)
    assert hint_regret(0.9, 0.1, 0.15) == 1.0
    assert hint_regret(0.5, 0.5, 0.15) == 0.0
    with pytest.raises(ValueError):
        hint_regret(1.0, 0.0, 0.0)


@given(unit, unit, st.floats(0.01, 2.0))
def test_regret_bounded(r_hint: float, r_plain: float, scale: float) -> None:
    assert 0.0 <= hint_regret(r_hint, r_plain, scale) <= 1.0


@given(unit, unit, unit, st.floats(0.01, 2.0))
def test_regret_monotone(a: float, b: float, r_plain: float, scale: float) -> None:
    lo, hi = sorted((a, b))
    assert hint_regret(lo, r_plain, scale) <= hint_regret(hi, r_plain, scale)
    assert hint_regret(r_plain, hi, scale) <= hint_regret(r_plain, lo, scale)


# --- plateau ---


@pytest.mark.parametrize(
    ("w", "expected"),
    [(0.0, 0.0), (0.15, 0.0), (0.275, 0.5), (0.4, 1.0), (0.5, 1.0), (0.6, 1.0), (0.725, 0.5), (0.85, 0.0), (1.0, 0.0)],
)
def test_plateau_band_edges(w: float, expected: float) -> None:
    assert plateau(w, 0.4, 0.6, 0.25) == pytest.approx(expected, abs=1e-9)


def test_plateau_rejects_bad_params() -> None:
    with pytest.raises(ValueError):
        plateau(0.5, 0.4, 0.6, 0.0)
    with pytest.raises(ValueError):
        plateau(0.5, 0.7, 0.6, 0.1)


@given(unit, unit, unit, st.floats(0.01, 1.0))
def test_plateau_bounded_and_one_inside(w: float, a: float, b: float, ramp: float) -> None:
    low, high = sorted((a, b))
    value = plateau(w, low, high, ramp)
    assert 0.0 <= value <= 1.0
    if low <= w <= high:
        assert value == 1.0
    if w <= low - ramp or w >= high + ramp:
        assert value == 0.0


@given(unit, unit, st.floats(0.01, 1.0))
def test_plateau_monotone_either_side(a: float, b: float, ramp: float) -> None:
    x, y = sorted((a, b))
    if y <= 0.4:  # rising below the band
        assert plateau(x, 0.4, 0.6, ramp) <= plateau(y, 0.4, 0.6, ramp)
    if x >= 0.6:  # falling above it
        assert plateau(x, 0.4, 0.6, ramp) >= plateau(y, 0.4, 0.6, ramp)


# --- raw, centring, scale ---


@given(unit, unit, unit, unit)
def test_raw_reward_monotone_in_both_terms(r1: float, r2: float, p1: float, p2: float) -> None:
    assert designer_raw_reward(min(r1, r2), p1, 0.4, 0.6) <= designer_raw_reward(max(r1, r2), p1, 0.4, 0.6)
    assert designer_raw_reward(r1, min(p1, p2), 0.4, 0.6) <= designer_raw_reward(r1, max(p1, p2), 0.4, 0.6)
    assert 0.0 <= designer_raw_reward(r1, p1, 0.4, 0.6) <= 1.0 + 1e-12


@given(st.lists(st.tuples(st.floats(-10, 10), SKILL_NAMES), max_size=40))
def test_centring_sums_to_zero_per_skill(pairs: list[tuple[float, str]]) -> None:
    rewards_, skills = [r for r, _ in pairs], [s for _, s in pairs]
    centred = center_per_skill(rewards_, skills)
    assert len(centred) == len(pairs)
    for skill in set(skills):
        group = [c for c, s in zip(centred, skills, strict=True) if s == skill]
        assert abs(math.fsum(group)) <= 1e-9 * max(1, len(group))
    # Centring keeps the order within a skill and the differences exactly.
    for i in range(len(pairs)):
        for j in range(len(pairs)):
            if skills[i] == skills[j]:
                assert centred[i] - centred[j] == pytest.approx(rewards_[i] - rewards_[j], abs=1e-9)


def test_centring_needs_matching_lengths() -> None:
    with pytest.raises(ValueError):
        center_per_skill([1.0], [])


def test_scale_caps_and_rejects_no_envs() -> None:
    assert designer_scale(24 * 16, 24, 4, 50.0) == 50.0
    assert designer_scale(8, 4, 2, 50.0) == 4.0
    with pytest.raises(ValueError):
        designer_scale(8, 0, 2, 50.0)


@given(st.integers(0, 10_000), st.integers(1, 100), st.integers(1, 16), st.floats(0.1, 100))
def test_scale_bounded_by_cap(n: int, envs: int, k: int, cap: float) -> None:
    assert 0.0 <= designer_scale(n, envs, k, cap) <= cap


# --- composed designer rewards ---

P = DesignerRewardParams()


def test_params_from_config_match_design_defaults() -> None:
    assert DesignerRewardParams.from_config(SelfPlayConfig()) == P
    custom = SelfPlayConfig(regret_scale=0.3, invalid_penalty=-1.0, regen_every=8, designer_scale_cap=10.0)
    params = DesignerRewardParams.from_config(custom)
    assert (params.regret_scale, params.invalid_penalty, params.k, params.scale_cap) == (0.3, -1.0, 8, 10.0)


def test_raw_reward_of_candidates() -> None:
    in_band = DesignerCandidate("Optimization", True, win_rate=0.5, r_hint=0.65, r_plain=0.5)
    assert candidate_raw_reward(in_band, P) == pytest.approx(1.0)
    no_hint = DesignerCandidate("Optimization", True, win_rate=0.5)
    assert candidate_raw_reward(no_hint, P) == pytest.approx(0.6)
    trivial = DesignerCandidate("Optimization", True, win_rate=1.0, r_hint=1.0, r_plain=1.0)
    assert candidate_raw_reward(trivial, P) == 0.0
    assert candidate_raw_reward(DesignerCandidate("Optimization", False), P) == -0.5
    with pytest.raises(ValueError, match="no win rate"):
        candidate_raw_reward(DesignerCandidate("Optimization", True), P)


def test_designer_rewards_worked_example() -> None:
    batch = [
        DesignerCandidate("Optimization", True, win_rate=0.5, r_hint=0.65, r_plain=0.5),  # raw 1.0
        DesignerCandidate("Optimization", True, win_rate=1.0, r_hint=1.0, r_plain=1.0),  # raw 0.0
        DesignerCandidate("Optimization", False),  # raw -0.5
        DesignerCandidate("Causal Inference", True, win_rate=0.3),  # raw 0.36, alone in its skill
    ]
    out = designer_rewards(batch, P, n_agent_samples=16, n_envs=4)  # scale = 16/4*4 = 16
    assert out == pytest.approx([16 * (1.0 - 1 / 6), 16 * (0.0 - 1 / 6), 16 * (-0.5 - 1 / 6), 0.0])


def test_designer_rewards_penalty_outside_centring() -> None:
    params = DesignerRewardParams(center_invalid=False, scale_cap=1.0)
    batch = [
        DesignerCandidate("Optimization", True, win_rate=0.5),
        DesignerCandidate("Optimization", True, win_rate=1.0),
        DesignerCandidate("Optimization", False),
    ]
    out = designer_rewards(batch, params, n_agent_samples=100, n_envs=1)
    assert out == pytest.approx([0.3, -0.3, -0.5])


def test_prompt_groups_are_centred_apart_within_one_skill() -> None:
    params = DesignerRewardParams(scale_cap=1.0)
    batch = [
        DesignerCandidate("Optimization", True, win_rate=0.5, group="p0"),  # raw 0.6
        DesignerCandidate("Optimization", False, group="p0"),  # raw -0.5
        DesignerCandidate("Optimization", False, group="p1"),  # raw -0.5
        DesignerCandidate("Optimization", False, group="p1"),
    ]
    out = designer_rewards(batch, params, n_agent_samples=100, n_envs=1)
    assert out == pytest.approx([0.55, -0.55, 0.0, 0.0])  # p1's two failures: no contrast
    by_skill = designer_rewards([replace(c, group=None) for c in batch], params, 100, 1)
    assert by_skill == pytest.approx([0.6 + 0.225, -0.5 + 0.225, -0.5 + 0.225, -0.5 + 0.225])


def test_all_invalid_skill_gets_no_signal_when_centred() -> None:
    batch = [DesignerCandidate("Optimization", False)] * 3
    assert designer_rewards(batch, P, 48, 3) == [0.0, 0.0, 0.0]
    kept = DesignerRewardParams(center_invalid=False)
    assert all(r < 0 for r in designer_rewards(batch, kept, 48, 3))


def test_designer_rewards_empty() -> None:
    assert designer_rewards([], P, 10, 1) == []


candidates = st.builds(
    DesignerCandidate,
    skill=SKILL_NAMES,
    valid=st.booleans(),
    win_rate=unit,
    r_hint=st.one_of(st.none(), unit),
    r_plain=unit,
)


@given(st.lists(candidates, min_size=1, max_size=30), st.integers(1, 500), st.integers(1, 30))
def test_designer_rewards_properties(batch: list[DesignerCandidate], n: int, envs: int) -> None:
    out = designer_rewards(batch, P, n, envs)
    scale = designer_scale(n, envs, P.k, P.scale_cap)
    assert len(out) == len(batch) and all(math.isfinite(r) for r in out)
    assert all(abs(r) <= 1.5 * scale + 1e-9 for r in out)
    for skill in {c.skill for c in batch}:
        group = [(r, c) for r, c in zip(out, batch, strict=True) if c.skill == skill]
        assert abs(math.fsum(r for r, _ in group)) <= 1e-6 * max(1.0, scale) * len(group)
        # Within a skill, every broken candidate ranks strictly below every working one.
        worst_valid = min((r for r, c in group if c.valid), default=math.inf)
        best_invalid = max((r for r, c in group if not c.valid), default=-math.inf)
        assert best_invalid < worst_valid
