"""The graded invalid reward: a design that got further through admission earns more, every
invalid design stays below every admitted one, and off means the paper's flat penalty."""

from __future__ import annotations

import itertools

import pytest

from spade_async.selfplay.design.parsing import REASON_CUT_OFF, REASON_EMPTY, REASON_NO_CODE
from spade_async.selfplay.design.progress import N_STAGES, REASON_LOOP, STAGES, admission_stage
from spade_async.selfplay.rewards import (
    DesignerCandidate,
    DesignerRewardParams,
    designer_rewards,
    graded_invalid_reward,
)
from tests.unit.test_curriculum import curriculum, design, live, play

LOADS = {"imports": True, "loads": True}


@pytest.mark.parametrize(
    ("parse_reason", "checks", "stage"),
    [
        (REASON_NO_CODE, None, 0),
        (REASON_EMPTY, None, 0),
        (REASON_CUT_OFF, None, 1),
        (REASON_LOOP, None, 1),
        (None, {"loads": False}, 2),  # the static check: a syntax error
        (None, {"size": False}, 2),
        (None, {"imports": False}, 3),
        (None, {"imports": True, "loads": False}, 3),  # parses, but no class with reset/step loads
        (None, {**LOADS, "reset": False}, 4),
        (None, {**LOADS, "reset": True, "step": False}, 5),
        (None, {**LOADS, "reset": True, "garbage": False}, 5),
        (None, {**LOADS, "reset": True, "step": True, "ends": False}, 6),
        (None, {**LOADS, "reset": True, "step": True, "solution": False, "deterministic": True}, 6),
        (None, {**LOADS, "reset": True, "step": True}, 6),  # validated, then rejected (a copy, no hint)
    ],
)
def test_each_rung_of_admission_has_its_stage(
    parse_reason: str | None, checks: dict[str, bool] | None, stage: int
) -> None:
    assert admission_stage(parse_reason, checks) == stage


def test_graded_rewards_rise_with_the_stage_and_stay_below_zero() -> None:
    rewards = [graded_invalid_reward(s, N_STAGES, -0.5) for s in range(N_STAGES)]
    assert rewards[0] == -0.5 and all(a < b < 0.0 for a, b in itertools.pairwise(rewards))
    with pytest.raises(ValueError):
        graded_invalid_reward(N_STAGES, N_STAGES, -0.5)  # admitted designs are not graded
    assert DesignerRewardParams().n_stages == N_STAGES == len(STAGES)


def test_a_group_with_no_admitted_design_gets_a_gradient_only_when_graded() -> None:
    group = [DesignerCandidate("Optimization", False, stage=s) for s in (0, 1, 4, 6)]
    flat = designer_rewards(group, DesignerRewardParams(scale_cap=1.0), n_agent_samples=8, n_envs=1)
    graded = designer_rewards(group, DesignerRewardParams(scale_cap=1.0, graded_invalid=True), 8, 1)
    assert flat == [0.0] * 4  # centring leaves the flat penalty nothing to contrast
    assert graded == sorted(graded) and graded[0] < 0.0 < graded[-1]


@pytest.mark.parametrize("center_invalid", [True, False])
def test_admitted_designs_rewards_do_not_change(center_invalid: bool) -> None:
    """Raw rewards of valid designs are the same; with centring only the group mean moves."""
    valid = [
        DesignerCandidate("Optimization", True, win_rate=0.5, r_hint=0.8, r_plain=0.5),
        DesignerCandidate("Optimization", True, win_rate=0.9),
    ]
    invalid = [DesignerCandidate("Optimization", False, stage=0)]  # stage 0: the same penalty either way
    for graded in (False, True):
        params = DesignerRewardParams(scale_cap=1.0, center_invalid=center_invalid, graded_invalid=graded)
        assert designer_rewards(valid + invalid, params, 8, 2) == designer_rewards(
            valid + invalid, DesignerRewardParams(scale_cap=1.0, center_invalid=center_invalid), 8, 2
        )


def test_retirement_grades_rejected_designs_by_their_first_attempts_stage() -> None:
    """The wire: the curriculum passes each rejected design's stage to the reward."""
    cur = curriculum(graded_invalid=True)
    good = design("Optimization", "good code")
    no_code, almost = design("Optimization", "prose", admitted=False), design("Optimization", "nearly", admitted=False)
    no_code.first_stage, almost.first_stage = 0, 5
    cur.live = [live(good)]
    cur.rejected = [no_code, almost]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    by_text = {
        "".join(chr(t) for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m): s.reward
        for s in cur.retire().designer_samples
    }
    assert by_text["good code"] > by_text["nearly"] > by_text["prose"]


@pytest.mark.parametrize("mode", ["signed", "positive", "admitted"])
def test_retirement_trains_the_designer_with_the_chosen_advantage(mode: str) -> None:
    """The wire: ``selfplay.designer_advantage`` decides what each design is trained with while
    its stored reward stays as it was. Of two broken designs the one that got further beats its
    group (positive reward): ``positive`` pulls it up, ``admitted`` does not."""
    cur = curriculum(graded_invalid=True, designer_advantage=mode)
    good = design("Optimization", "good code")
    no_code, almost = design("Optimization", "prose", admitted=False), design("Optimization", "nearly", admitted=False)
    no_code.first_stage, almost.first_stage = 0, 6
    cur.live = [live(good)]
    cur.rejected = [no_code, almost]
    play(cur, cur.live[0], 0, [1.0] * 4, [1.0] * 4)  # too easy, no regret: raw reward 0
    by_text = {
        "".join(chr(t) for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m): s
        for s in cur.retire().designer_samples
    }
    good_s, almost_s, bad_s = by_text["good code"], by_text["nearly"], by_text["prose"]
    assert bad_s.reward < 0.0 < almost_s.reward < good_s.reward  # centred over the three
    assert good_s.advantage == good_s.reward
    expected = {
        "signed": (almost_s.reward, bad_s.reward),
        "positive": (almost_s.reward, 0.0),
        "admitted": (0.0, 0.0),
    }[mode]
    assert (almost_s.advantage, bad_s.advantage) == expected
