"""``warmstart.replay``: warm-start pairs trained after each of the run's updates, in its version.

Through the real run loop (scripted engine and learner): every update is followed by one
supervised step on ``replay`` pairs rendered as the warm start renders them -- a design prompt
showing a library file of a training family, a library file as the target -- and the adapter
versions stay one per update. Off by default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.envlib import split
from spade_async.run.assemble import open_run
from spade_async.run.replay import WarmStartReplay
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_failure_summary import summary_designer
from tests.integration.test_pipeline import heads_if_hinted, make_config

pytestmark = pytest.mark.anyio


async def run_with_replay(tmp_path: Path, replay: int) -> ScriptedLearner:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
    cfg.warmstart.replay = replay
    learner = ScriptedLearner()
    engine = ScriptedEngine(policies={"designer": summary_designer([]), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    return learner


async def test_each_update_is_followed_by_the_warm_starts_pairs(tmp_path: Path) -> None:
    learner = await run_with_replay(tmp_path, replay=2)
    train, held_out = split()
    trained = [b for b in learner.batches if any(s.role == "agent" for s in b)]
    replays = [b for b in learner.batches if not any(s.role == "agent" for s in b)]
    assert len(trained) == 4 and len(replays) == 4
    assert learner.version == 4  # one version per update: the replay makes none
    assert learner.sft_lrs == [0.001] * 4  # warmstart.lr
    for batch in replays:
        assert len(batch) == 2
        for pair in batch:
            target = learner_target(pair.input_ids, pair.loss_mask)
            assert any(f.code.strip() in target for f in train)
            assert not any(f.code.strip() in target for f in held_out)


async def test_no_replay_by_default(tmp_path: Path) -> None:
    learner = await run_with_replay(tmp_path, replay=0)
    assert learner.sft_lrs == []


def learner_target(ids: list[int], mask: list[int]) -> str:
    """The trained tokens of a pair as text (the scripted engine's tokenizer)."""
    return ScriptedEngine().decode([t for t, m in zip(ids, mask, strict=True) if m])


def test_the_pairs_of_a_step_are_the_same_whatever_came_before() -> None:
    """A resumed run trains the pairs the uninterrupted run trained at that step."""
    cfg = Config.model_validate({"warmstart": {"replay": 2}, "corpus": {"max_chars": 200}})
    first, second = WarmStartReplay(cfg, ScriptedEngine()), WarmStartReplay(cfg, ScriptedEngine())
    for step in range(5):  # the first replay walks steps 0..4; the second jumps to 4 (a resume)
        walked = first.pairs(step)
    jumped = second.pairs(4)
    assert [p.input_ids for p in walked] == [p.input_ids for p in jumped]
    assert [p.input_ids for p in first.pairs(5)] != [p.input_ids for p in walked]
