"""A step's plays turned into what the learner and the step record need: pure functions.

Why apart from the pipeline: the pipeline writes episodes to the store and the outcomes into
the curriculum (effects); what the plays *mean* for training (which episode becomes a sample,
with which advantage) and for the step's metrics is a function of the plays alone, and is
tested as one. Only plain (unhinted) plays train the agent: a hinted play is evidence for the
designer's regret, not an on-policy sample of the policy without the hint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spade_async.learner.grpo import group_advantages
from spade_async.learner.samples import TrainSample
from spade_async.selfplay.play.agent import Episode


@dataclass(frozen=True)
class Play:
    """One finished episode of one live environment."""

    env_id: str
    episode: Episode


def agent_samples(plays: Sequence[Play], temperature: float) -> tuple[list[TrainSample], int]:
    """GRPO samples from the plain plays, grouped per environment (the group baseline of
    :func:`~spade_async.learner.grpo.group_advantages`); plays with a zero advantage or no
    trainable tokens give none. Returns the samples and the count of zero-variance groups."""
    plain = [p for p in plays if not p.episode.hinted and p.episode.error is None]
    advantages, zero_variance = group_advantages([p.episode.outcome for p in plain], [p.env_id for p in plain])
    samples = [
        p.episode.to_sample(a, temperature)
        for p, a in zip(plain, advantages, strict=True)
        if a != 0.0 and p.episode.loss_mask
    ]
    return samples, zero_variance
