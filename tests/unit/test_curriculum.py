"""The curriculum: skill rotation, matched means, retirement (designer credit), state round trip."""

from __future__ import annotations

import copy

import pytest

from spade_async.config import SKILLS, SelfPlayConfig
from spade_async.engine.base import Completion
from spade_async.memory.records import env_id_for
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import Design, DesignJob
from spade_async.selfplay.design.novelty import code_key
from spade_async.selfplay.generation import duplicate_keepers
from spade_async.selfplay.rewards import DesignerCandidate, DesignerRewardParams, designer_rewards

DOC = Document("d", "doc", "text")


def design(skill: str, text: str, *, admitted: bool = True, attempts: int = 1, code: str | None = None) -> Design:
    ids = [ord(c) for c in text]
    d = Design(
        job=DesignJob(skill, DOC, "fresh"),
        prompt_ids=[1, 2, 3],
        completion=Completion([1, 2, 3], ids, [-0.5] * len(ids), text, "stop", 0),
        code=code if code is not None else text,
        hint="h",
        admitted=admitted,
        attempts=attempts,
    )
    return d


def live(d: Design, step: int = 0) -> LiveEnv:
    assert d.code is not None
    return LiveEnv(env_id_for(d.code), d.code, d.hint, d.job.skill, "fresh", step, design=d)


def curriculum(**kw: object) -> Curriculum:
    fields: dict[str, object] = {"envs_per_step": 4, "skills_per_regen": 2, "plays": 4, "regen_every": 2, **kw}
    cfg = SelfPlayConfig.model_validate(fields)
    return Curriculum(cfg, seed=3, designer_temperature=1.0, n_agent_samples_per_env=4)


def play(
    cur: Curriculum, env: LiveEnv, step: int, plain: list[float], hinted: tuple[float, ...] | list[float] = ()
) -> None:
    for o in plain:
        cur.record(step, env.env_id, False, o)
    for o in hinted:
        cur.record(step, env.env_id, True, o)


def test_skill_rotation_draws_every_skill_once_per_cycle() -> None:
    cur = curriculum(skills_per_regen=3)
    drawn = [s for _ in range(4) for s in cur.next_skills()]  # 12 draws = two full cycles of 6
    assert sorted(drawn[:6]) == sorted(SKILLS) and sorted(drawn[6:]) == sorted(SKILLS)
    assert all(len(set(drawn[i : i + 3])) == 3 for i in range(0, 12, 3))


def test_matched_means_use_only_steps_with_both_arms() -> None:
    env = LiveEnv("e", "code", "h", "Optimization", "seed", 0)
    env.plain = {0: [0.0, 1.0], 1: [1.0, 1.0]}
    env.hinted = {0: [1.0, 1.0]}
    assert env.matched_means() == (1.0, 0.5)
    assert env.win_rate() == 0.75
    assert env.regret(0.15) == 1.0


def test_retirement_scores_every_design_and_pairs_rewards_with_their_own_tokens() -> None:
    cur = curriculum()
    good, poor = design("Optimization", "good code"), design("Optimization", "poor code")
    rejected = design("Optimization", "broken", admitted=False)
    cur.live = [live(good), live(poor)]
    cur.rejected = [rejected]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0])  # w = 0.5, regret 1
    play(cur, cur.live[1], 0, [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0])  # w = 1, regret 0
    retired = cur.retire()
    by_text = {
        "".join(chr(t) for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m): s for s in retired.designer_samples
    }
    assert set(by_text) == {"good code", "poor code", "broken"}
    expected = designer_rewards(
        [
            cur_c
            for cur_c in (
                retired.scored[0].candidate,
                retired.scored[1].candidate,
                DesignerCandidate("Optimization", False),
            )
        ],
        DesignerRewardParams.from_config(cur.cfg),
        n_agent_samples=8,
        n_envs=2,
    )
    assert by_text["good code"].reward == pytest.approx(expected[0])
    assert by_text["poor code"].reward == pytest.approx(expected[1])
    assert by_text["good code"].reward > by_text["poor code"].reward > by_text["broken"].reward
    assert retired.designer_rewards[env_id_for("good code")] == by_text["good code"].reward
    assert cur.live == [] and cur.rejected == [] and cur.generation == 1


def test_the_play_audit_outranks_a_pin() -> None:
    """A pinned environment expelled by the play audit is unpinned: scored invalid with the
    audit's reason, and not carried into the next generation (a pinned one that behaved is)."""
    cur = curriculum()
    cheat, kept = live(design("Optimization", "cheat code")), live(design("Optimization", "kept code"))
    cur.live = [cheat, kept]
    cur.pinned = {cheat.env_id, kept.env_id}
    play(cur, kept, 0, [1.0, 0.0])
    assert cur.expel(cheat.env_id, "won in play") is cheat
    assert cur.pinned == {kept.env_id}
    retired = cur.retire()
    (scored,) = [s for s in retired.scored if s.env_id == cheat.env_id]
    assert not scored.candidate.valid and scored.why_invalid == "it failed the play audit: won in play"
    assert [e.env_id for e in retired.envs] == [kept.env_id, cheat.env_id]
    assert [e.env_id for e in cur.live] == [kept.env_id]


def test_a_design_crashing_on_every_play_gets_the_penalty_and_stays_in_the_batch() -> None:
    cur = curriculum()
    ok, crashes = design("Optimization", "works"), design("Optimization", "crashes")
    cur.live = [live(ok), live(crashes)]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0])
    for _ in range(8):
        cur.record_error(cur.live[1].env_id)
    retired = cur.retire()
    assert len(retired.designer_samples) == 2
    crashed = next(s for s in retired.scored if s.design is crashes)
    assert not crashed.candidate.valid and crashed.why_invalid == "no play of it finished"
    assert retired.designer_rewards[env_id_for("crashes")] < 0 < retired.designer_rewards[env_id_for("works")]


@pytest.mark.parametrize(("errors", "invalid"), [(1, False), (2, True)])
def test_errors_past_the_share_make_a_design_invalid(errors: int, invalid: bool) -> None:
    cur = curriculum(max_play_error_share=0.25)
    d = design("Optimization", "flaky")
    cur.live = [live(d), live(design("Optimization", "other"))]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0][: 6 - errors])
    for _ in range(errors):
        cur.record_error(cur.live[0].env_id)
    # 1 error in 6 plays (17%) is scored on the survivors; 2 in 6 (33%) is invalid.
    assert cur.score_design(cur.live[0]).candidate.valid is not invalid


def test_a_repaired_design_is_scored_as_invalid_but_stays_playable() -> None:
    cur = curriculum()
    repaired, other = design("Optimization", "fixed on retry", attempts=2), design("Optimization", "other")
    cur.live = [live(repaired), live(other)]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0], [1.0] * 4)  # plays perfectly well
    play(cur, cur.live[1], 0, [1.0, 1.0, 1.0, 1.0])
    scored = cur.score_design(cur.live[0])
    cur_candidate_of_other = cur.score_design(cur.live[1]).candidate
    assert not scored.candidate.valid and "repair" in (scored.why_invalid or "")
    assert scored.env_candidate is not None and scored.env_candidate.valid  # the environment itself is scored as played
    retired = cur.retire()
    # The trained sample (the broken first attempt) gets the penalty: below the other design...
    trained = {s.meta["env_id"]: s.reward for s in retired.designer_samples}
    assert trained[env_id_for("fixed on retry")] < 0 < trained[env_id_for("other")]
    # ...while the stored reward is what the repaired environment earned: in the band with a
    # helpful hint, it beats the other one (always won, no regret), scored in the same batch.
    stored = retired.designer_rewards
    assert stored[env_id_for("fixed on retry")] > 0 > stored[env_id_for("other")]
    expected = designer_rewards(
        [scored.env_candidate, cur_candidate_of_other],
        DesignerRewardParams.from_config(cur.cfg),
        n_agent_samples=cur.n_agent_samples_per_env * 2,
        n_envs=2,
    )
    assert [stored[env_id_for("fixed on retry")], stored[env_id_for("other")]] == pytest.approx(expected)


def test_duplicate_keeper_is_deterministic_and_prefers_first_attempts() -> None:
    a = design("Optimization", "t1", code="same")
    b = design("Optimization", "t2", code="same")
    repaired = design("Optimization", "t3", code="dup2", attempts=2)
    first = design("Optimization", "t4", code="dup2")
    designs = [a, b, repaired, first]
    keepers = duplicate_keepers(designs)
    assert keepers == {code_key("same"): 0, code_key("dup2"): 3}
    # A rejected copy never wins.
    assert duplicate_keepers([design("Optimization", "r", code="c", admitted=False), a]) == {code_key("same"): 1}


def test_state_round_trips_exactly() -> None:
    cur = curriculum()
    cur.next_skills()
    d = design("Optimization", "x")
    cur.live = [live(d)]
    play(cur, cur.live[0], 0, [1.0, 0.0], [1.0])
    cur.record_error(cur.live[0].env_id)
    state = copy.deepcopy(cur.state())
    again = curriculum()
    again.load_state(state)
    assert again.next_skills() == cur.next_skills()
    assert again.live[0].plain == {0: [1.0, 0.0]} and again.live[0].errors == 1
    assert again.rng.random() == cur.rng.random()
    assert again.design_rng.random() == cur.design_rng.random() != cur.rng.random()
    assert again.generation == cur.generation


def test_only_model_written_environments_are_audited() -> None:
    from spade_async.admission.audit import audited

    assert audited("fresh") and audited("mutation")
    assert not audited("seed") and not audited("injected")
