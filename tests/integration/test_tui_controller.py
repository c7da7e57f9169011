"""The TUI's controller steers a real pipeline: pause holds production, resume releases it,
stop ends the run after the step in flight with that step checkpointed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from spade_async.launch import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import make_config
from tui.run import PipelineController

pytestmark = pytest.mark.anyio


async def test_pause_resume_and_stop(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=4, hinted_plays=0)
    cfg.run.max_steps = 50
    cfg.run.checkpoint_every = 100
    learner = ScriptedLearner()
    controller = PipelineController()
    controller.pause()  # pressed before the pipeline existed: applied on attach
    result: dict[str, int] = {}
    async with open_run(cfg, engine=ScriptedEngine(latency_s=0.02), learner=learner, report=lambda s: None) as pipeline:
        controller.attach(pipeline)
        assert controller.paused

        async def drive() -> None:
            result["steps"] = await pipeline.run(sync=True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await anyio.sleep(0.5)
            assert learner.batches == []  # paused: nothing was produced
            controller.resume()
            for _ in range(1000):  # up to 20 s for two steps to be trained
                if len(learner.batches) >= 2:
                    break
                await anyio.sleep(0.02)
            controller.request_stop()
    assert len(learner.batches) >= 2 and 2 <= result["steps"] < 50
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        last = db.execute("SELECT max(step) FROM steps").fetchone()[0]
        assert db.execute("SELECT max(step) FROM checkpoints").fetchone()[0] == last
