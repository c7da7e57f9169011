"""The TUI's controller steers a real pipeline: pause holds production, resume releases it,
stop ends the run after the step in flight with that step checkpointed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from spade_async.run.assemble import open_run
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


def test_tui_run_with_a_gpu_preset_on_cpu_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from spade_async.config import load_config
    from tui.run import run_with_tui

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    root = Path(__file__).resolve().parents[2]
    cfg = load_config(root / "configs" / "games_qwen3_4b.toml", [f'run.run_dir="{tmp_path / "gpu-run"}"'])
    assert run_with_tui(cfg, sync=False, resume=False, force=False) == 1
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "gpu-run").exists()
