"""What a design depends on: its prompt is drawn from the run's seed alone (the curriculum's
``design_rng``, one RNG per prompt), and its text is sampled from a seed of its own
(``generation.design_request_seed``). So two runs that differ in a setting the designer does
not see (how rejected designs are replaced, what else the engine samples meanwhile) write the
same designs from the same prompts, and a comparison of two settings is paired design by
design. Checked through the real run loop with a designer whose every choice is a draw from
the request's RNG."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from spade_async.run.assemble import open_run
from spade_async.testing import BROKEN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import coin_variant, make_config

pytestmark = pytest.mark.anyio


def random_designer(seen: list[tuple[str, str]]):
    """A coin game numbered by a draw, or a broken file (a rejected design, a place to fill)."""

    def policy(prompt: str, rng: random.Random) -> str:
        code = coin_variant(rng.randrange(10**6)) if rng.random() < 0.6 else BROKEN_ENV
        seen.append((prompt, code))
        return f"```python\n{code}```"

    return policy


def random_agent(prompt: str, rng: random.Random) -> str:
    return rng.choice(["\\boxed{heads}", "\\boxed{tails}"])


async def designs_of(tmp_path: Path, engine_seed: int = 0, **selfplay: object) -> list[tuple[str, str]]:
    await anyio.Path(tmp_path).mkdir()
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, mutation_fraction=0.5, **selfplay)
    cfg.memory.design_pool = "library"
    cfg.memory.failure_summary = False
    cfg.run.max_steps = 8
    seen: list[tuple[str, str]] = []
    engine = ScriptedEngine(policies={"designer": random_designer(seen), "agent": random_agent}, seed=engine_seed)
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 8
    return sorted(seen)


async def test_the_fill_does_not_move_the_design_prompts(tmp_path: Path) -> None:
    by_memory = await designs_of(tmp_path / "memory", fill_from="memory")
    by_seeds = await designs_of(tmp_path / "seeds", fill_from="seeds")
    assert len(by_memory) == 8  # 2 designs in each of 4 generations
    assert any(code == BROKEN_ENV for _, code in by_memory)  # places were filled
    assert any(code != BROKEN_ENV for _, code in by_memory)  # and designs admitted and played
    assert [p for p, _ in by_memory] == [p for p, _ in by_seeds]
    assert by_memory == by_seeds


async def test_the_engines_own_draws_do_not_move_the_designs(tmp_path: Path) -> None:
    """An engine's shared RNG is drawn by whatever else it batches (in a real run the hints of
    the admitted designs, unseeded requests, rows sampled beside them): a design request samples
    from its own seed instead."""
    one = await designs_of(tmp_path / "one", engine_seed=1)
    other = await designs_of(tmp_path / "other", engine_seed=2)
    assert len({code for _, code in one}) > 2  # the draws differ from design to design
    assert one == other
