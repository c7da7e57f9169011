"""``selfplay.design_samples``: several completions of one design prompt, one GRPO group.

Through the real run loop (scripted engine and learner): a generation asks its designs of
``envs_per_step / design_samples`` prompts, each sampled ``design_samples`` times from the same
prompt tokens; every completion is trained on, and the designer advantages are centred within
each prompt's completions, not over the skill (the paper's centring, the default).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path

import pytest

from spade_async.learner.samples import TrainSample
from spade_async.run.assemble import open_run
from spade_async.testing import BROKEN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import coin_variant, heads_if_hinted, make_config

pytestmark = pytest.mark.anyio


def three_working_one_broken():
    counter = itertools.count(1)
    kinds = itertools.cycle(["coin", "coin", "coin", "broken"])

    def policy(prompt: str, rng: object) -> str:
        code = coin_variant(next(counter)) if next(kinds) == "coin" else BROKEN_ENV
        return f"```python\n{code}```"

    return policy


async def designer_samples(tmp_path: Path, design_samples: int) -> list[TrainSample]:
    cfg = make_config(
        tmp_path,
        mode="spade",
        envs_per_step=4,
        skills_per_regen=1,  # every design of a generation has one skill: only the group can split them
        repair_turns=0,
        mutation_fraction=0.5,
        design_samples=design_samples,
    )
    learner = ScriptedLearner()
    engine = ScriptedEngine(policies={"designer": three_working_one_broken(), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    return [s for batch in learner.batches for s in batch if s.role == "designer"]


async def test_each_prompt_is_sampled_as_a_group_and_centred_within_it(tmp_path: Path) -> None:
    samples = await designer_samples(tmp_path, design_samples=2)
    groups: dict[str, list[TrainSample]] = defaultdict(list)
    for s in samples:
        groups[s.group].append(s)
    assert len(samples) == 4  # one trained generation: 4 designs of 2 prompts
    assert len(groups) == 2 and all(len(g) == 2 for g in groups.values())
    for members in groups.values():
        prompts = {tuple(s.input_ids[: s.loss_mask.index(1)]) for s in members}
        assert len(prompts) == 1  # the same prompt, sampled twice
        assert math.isclose(sum(s.advantage for s in members), 0.0, abs_tol=1e-9)  # centred within the prompt
    assert any(s.advantage != 0 for s in samples)  # the broken design's group has a contrast


async def test_one_sample_per_prompt_centres_per_skill_as_the_paper(tmp_path: Path) -> None:
    samples = await designer_samples(tmp_path, design_samples=1)
    assert len(samples) == 4
    assert len({s.group for s in samples}) == 1  # the skill
    assert math.isclose(sum(s.advantage for s in samples), 0.0, abs_tol=1e-9)
    prompts = {tuple(s.input_ids[: s.loss_mask.index(1)]) for s in samples}
    assert len(prompts) == 4
