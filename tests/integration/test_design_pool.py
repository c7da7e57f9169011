"""``memory.design_pool``: what the pipeline's design prompts show, through the real run loop.

With ``library`` every fresh design shows a file of the generated library's training families
(or a played design of the run) and every mutation mutates one; no held-out family and no seed
game is ever shown. With ``memory`` (the paper) they show the run's memory, seeds first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.envlib import split
from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_failure_summary import summary_designer
from tests.integration.test_pipeline import coin_variant, heads_if_hinted, make_config

pytestmark = pytest.mark.anyio


async def captured_prompts(tmp_path: Path, pool: str) -> list[str]:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, mutation_fraction=0.5)
    cfg.memory.design_pool = pool  # type: ignore[assignment]
    cfg.memory.failure_summary = False
    prompts: list[str] = []
    engine = ScriptedEngine(policies={"designer": summary_designer(prompts), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    return prompts


async def test_library_pool_shows_training_families_or_the_runs_designs(tmp_path: Path) -> None:
    prompts = await captured_prompts(tmp_path, "library")
    train, held_out = split()
    designs = [coin_variant(n) for n in range(1, 1 + len(prompts))]
    assert len(prompts) == 4
    for prompt in prompts:
        shown_library = [f for f in train if f.code.strip() in prompt]
        shown_designs = [c for c in designs if c.strip() in prompt]
        assert len(shown_library) + len(shown_designs) == 1, prompt[-2000:]
        assert not any(f.code.strip() in prompt for f in held_out)
        assert COIN_ENV.strip() not in prompt  # the run's seed game is never shown
    assert any(f.code.strip() in p for p in prompts for f in train)


async def test_memory_pool_shows_the_runs_memory(tmp_path: Path) -> None:
    prompts = await captured_prompts(tmp_path, "memory")
    train, _ = split()
    assert len(prompts) == 4
    assert not any(f.code.strip() in p for p in prompts for f in train)
    assert any(COIN_ENV.strip() in p for p in prompts)
