"""The adapter probe: a fixed prompt, sampled with a fixed seed after each load, scored by both sides.

After the engine loads version ``v`` (the learner holds the same weights), the probe samples
``tokens`` tokens of a fixed prompt at temperature 1 with a fixed seed, and:

1. the engine must report ``v`` on the completion (what it says it used);
2. the learner's logprobs of those tokens must match the engine's: mean |diff| <= ``max_gap``
   (the bf16 bound, 0.15 nats; an engine on other weights -- a stale adapter, the base, a
   missing LoRA scale -- is off by more once training has moved the weights);
3. when the learner's own logprobs of the previous probe's tokens moved by more than
   ``MIN_CHANGE`` since that probe (the weights changed), the engine's must have moved too: an
   engine that ignored the load samples the same seed from the same weights and returns the
   same tokens with the same logprobs, up to float noise (a prefix-cache hit recomputes them
   slightly differently), so the same tokens with logprobs that moved less than
   ``STALE_SHARE`` of the learner's move are a repeat.

A probe that fails any of these is a mismatch; the caller records it and stops the run after
``stop_after`` in a row. The gap check is skipped where the engine is known to serve other
weights (``model.qlora_serve = "base"``: the NF4 error alone exceeds the bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import anyio
from torch import Tensor

from spade_async.engine.base import Completion, Engine, GenerationRequest, Sampling
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.samples import TrainSample

PROMPT = "Count from one to ten, then name the colours of the rainbow in order."
SEED = 20_260_101
MIN_CHANGE = 0.01
"""Mean nats the learner's logprobs of the previous probe must have moved for check 3 to apply
(below it the update is within the engine's own float noise: a stale engine and a live one
look alike)."""
STALE_SHARE = 0.25
"""Same tokens, and the engine's logprobs moved less than this share of the learner's: a repeat."""


class Scorer(Protocol):
    """What the probe needs from the learner: its version and its logprobs of given tokens."""

    version: int

    def logprobs(self, samples: list[TrainSample], max_seq_len: int | None = None) -> list[Tensor]: ...


@dataclass(frozen=True)
class ProbeResult:
    version: int
    reported: int
    """The adapter version the engine put on the probe's completion."""
    gap_mean: float
    gap_max: float
    learner_moved: float | None
    """Mean |change| of the learner's logprobs on the previous probe's tokens (None: no previous probe)."""
    repeated: bool
    """The engine returned the previous probe's tokens with logprobs that hardly moved."""
    problem: str | None
    """What is wrong, for a person (None: the probe passed)."""

    @property
    def ok(self) -> bool:
        return self.problem is None

    def metrics(self) -> dict[str, float]:
        return {"probe_gap_mean": self.gap_mean, "probe_gap_max": self.gap_max, "probe_ok": float(self.ok)}


def _sample(completion: Completion) -> TrainSample:
    n_prompt, n_new = len(completion.prompt_ids), len(completion.token_ids)
    return TrainSample(
        role="agent",
        input_ids=[*completion.prompt_ids, *completion.token_ids],
        loss_mask=[0] * n_prompt + [1] * n_new,
        behaviour_logprobs=[0.0] * n_prompt + list(completion.logprobs),
        advantage=0.0,
        adapter_version=completion.adapter_version,
    )


class AdapterProbe:
    """Checks the engine after each adapter load (see the module docstring)."""

    def __init__(self, engine: Engine, learner: Scorer, *, tokens: int = 16, max_gap: float | None = 0.15) -> None:
        self.engine = engine
        self.learner = learner
        self.tokens = tokens
        self.max_gap = max_gap
        """None: the gap check is off (the engine serves other weights by design)."""
        self._previous: tuple[Completion, Tensor] | None = None
        """The last probe's completion and the learner's logprobs of it at that time."""

    async def _learner_logprobs(self, completion: Completion) -> Tensor:
        (lp,) = await anyio.to_thread.run_sync(CPU_SHARE.staged(self.learner.logprobs), [_sample(completion)])
        return lp.float()

    async def check(self, version: int) -> ProbeResult:
        """Probe the engine right after it loaded ``version`` (the learner must hold it too)."""
        prompt = self.engine.chat_prompt([{"role": "user", "content": PROMPT}])
        request = GenerationRequest(prompt, Sampling(temperature=1.0, max_new_tokens=self.tokens, seed=SEED))
        (completion,) = await self.engine.generate([request])
        import torch

        ours = await self._learner_logprobs(completion)
        theirs = torch.tensor(completion.logprobs, dtype=torch.float32)
        gap = (ours - theirs).abs() if len(theirs) else torch.zeros(1)
        moved: float | None = None
        repeated = False
        if self._previous is not None:
            before, before_lp = self._previous
            now_lp = await self._learner_logprobs(before)
            moved = float((now_lp - before_lp).abs().mean()) if len(before_lp) else 0.0
            if completion.token_ids == before.token_ids and len(before_lp):
                engine_moved = float((torch.tensor(completion.logprobs) - torch.tensor(before.logprobs)).abs().mean())
                repeated = engine_moved < STALE_SHARE * moved
        problem = None
        if completion.adapter_version != version:
            problem = f"the engine reports adapter v{completion.adapter_version} after loading v{version}"
        elif self.max_gap is not None and float(gap.mean()) > self.max_gap:
            problem = (
                f"the engine's logprobs differ from the learner's under v{version} by {float(gap.mean()):.3f} "
                f"nats on average (bound {self.max_gap}): it is not serving the learner's weights"
            )
        elif repeated and moved is not None and moved > MIN_CHANGE:
            problem = (
                f"after loading v{version} the engine repeated its previous probe while the learner's "
                f"weights moved its logprobs by {moved:.3f} nats: the load did not take effect"
            )
        self._previous = (completion, ours)
        return ProbeResult(
            version=version,
            reported=completion.adapter_version,
            gap_mean=float(gap.mean()),
            gap_max=float(gap.max()),
            learner_moved=moved,
            repeated=repeated,
            problem=problem,
        )
