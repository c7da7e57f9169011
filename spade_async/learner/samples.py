"""What the self-play stages hand to the learner: one token sequence with a loss mask.

Why one flat record for both roles: the designer's completion and the agent's multi-turn
transcript are both "tokens the policy sampled, interleaved with tokens it did not". A
single ``input_ids`` / ``loss_mask`` / ``behaviour_logprobs`` triple, aligned position by
position, lets the learner treat them identically; only the advantage and the staleness
(adapter version) differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["agent", "designer"]


@dataclass
class TrainSample:
    """A sequence to train on.

    ``input_ids``, ``loss_mask`` and ``behaviour_logprobs`` have equal length. Position ``i``
    of ``loss_mask`` is 1 when token ``input_ids[i]`` was sampled by the policy (and so is
    trained on); ``behaviour_logprobs[i]`` is then its logprob at sampling time (0.0 elsewhere).
    """

    role: Role
    input_ids: list[int]
    loss_mask: list[int]
    behaviour_logprobs: list[float]
    advantage: float
    adapter_version: int
    """Adapter version that generated the sampled tokens (for staleness and TIS)."""
    temperature: float = 1.0
    """Sampling temperature; the learner divides logits by it."""
    reward: float = 0.0
    """The raw reward the advantage was computed from (for metrics)."""
    group: str = ""
    """GRPO group key: the environment id for agent samples, the skill for designer samples."""
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.input_ids)
        if len(self.loss_mask) != n or len(self.behaviour_logprobs) != n:
            raise ValueError(
                f"TrainSample fields misaligned: {n} ids, {len(self.loss_mask)} mask, "
                f"{len(self.behaviour_logprobs)} logprobs"
            )

    @property
    def n_trained_tokens(self) -> int:
        return sum(self.loss_mask)
