"""A design records the admission stage its first attempt stopped on, and a completion the
engine stopped in a loop is scored as cut off with its own reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from spade_async.config import SandboxConfig
from spade_async.engine.base import Completion, GenerationRequest, Sampling
from spade_async.engine.loops import LOOP
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import DesignJob, design_environment
from spade_async.selfplay.design.progress import N_STAGES, REASON_LOOP
from spade_async.testing import COIN_ENV, ScriptedEngine

pytestmark = pytest.mark.anyio


class LoopingDesigner(ScriptedEngine):
    """Designer completions end as the engine's loop check would end them."""

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        out = await super().generate(requests)
        return [
            replace(c, finish_reason=LOOP) if r.role == "designer" else c for c, r in zip(out, requests, strict=True)
        ]


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0, max_children=4)) as p:
        yield p


async def design(engine: ScriptedEngine, pool: SandboxPool) -> object:
    return await design_environment(
        engine,
        pool,
        DesignJob("Optimization", Document("d", "t", "Coins."), "fresh"),
        designer_sampling=Sampling(max_new_tokens=2000),
        hint_sampling=Sampling(max_new_tokens=16),
        max_turns=5,
        repair_turns=0,
        separate_hint_call=False,
    )


LOOPING = "```python\n" + "x = 1\n" * 40


async def test_a_looping_completion_is_cut_off_with_its_reason(pool: SandboxPool) -> None:
    d = await design(LoopingDesigner(policies={"designer": lambda p, r: LOOPING}), pool)
    assert not d.admitted and d.reasons == [REASON_LOOP] and d.first_stage == 1


async def test_the_first_attempts_stage_is_recorded(pool: SandboxPool) -> None:
    admitted = await design(ScriptedEngine(policies={"designer": lambda p, r: f"```python\n{COIN_ENV}```"}), pool)
    assert admitted.admitted and admitted.first_stage == N_STAGES
    broken_reset = COIN_ENV.replace("def reset(self, seed=None):", "def reset(self, seed=None):\n        1 / 0")
    failed = await design(ScriptedEngine(policies={"designer": lambda p, r: f"```python\n{broken_reset}```"}), pool)
    assert not failed.admitted and failed.first_stage == 4, failed.reasons
    prose = await design(ScriptedEngine(policies={"designer": lambda p, r: "I would write a game."}), pool)
    assert prose.first_stage == 0
