"""Plays become agent samples: plain plays only, advantages centred per environment."""

from __future__ import annotations

from spade_async.selfplay.play.agent import Episode
from spade_async.selfplay.play.scoring import Play, agent_samples


def episode(env_id: str, outcome: float, *, hinted: bool = False, error: str | None = None) -> Episode:
    return Episode(
        env_id=env_id,
        hinted=hinted,
        seed=0,
        outcome=outcome,
        turns=1,
        truncated=False,
        transcript=[],
        input_ids=[1, 2, 3],
        loss_mask=[0, 1, 1],
        behaviour_logprobs=[0.0, -0.5, -0.5],
        error=error,
    )


def test_hinted_and_failed_plays_train_nothing_and_groups_are_per_environment() -> None:
    plays = [
        Play("a", episode("a", 1.0)),
        Play("a", episode("a", 0.0)),
        Play("a", episode("a", 1.0, hinted=True)),  # hinted: evidence for regret only
        Play("b", episode("b", 1.0)),
        Play("b", episode("b", 1.0)),  # all won: zero variance
        Play("b", episode("b", 0.0, error="timeout")),
    ]  # failed: not a sample
    samples, zero_variance = agent_samples(plays, temperature=0.7)
    assert zero_variance == 1
    assert [(s.group, s.reward) for s in samples] == [("a", 1.0), ("a", 0.0)]
    assert samples[0].advantage > 0 > samples[1].advantage
    assert samples[0].advantage == -samples[1].advantage
    assert all(s.temperature == 0.7 and s.role == "agent" for s in samples)
