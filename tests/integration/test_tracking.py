"""Tracking sinks write files their own readers load back: TensorBoard's event reader and
trackio's local store; names are slash-namespaced; a missing package is one clear error."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from spade_async.tracking.names import eval_metrics, namespaced
from spade_async.tracking.sinks import TensorBoardSink, TrackingError, WandbSink, check_installed
from tests.integration.test_pipeline import make_config

pytestmark = pytest.mark.anyio


def load_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_names_are_slash_namespaced_and_nan_is_dropped() -> None:
    out = namespaced(
        {
            "agent_return_mean": 0.25,
            "regret_mean": 0.5,
            "learnable_fraction": 1.0,
            "valid_fraction": float("nan"),
            "new_key": 2,
            "flag": True,
        }
    )
    assert out == {
        "agent/return_mean": 0.25,
        "designer/regret_mean": 0.5,
        "envs/learnable_frac": 1.0,
        "misc/new_key": 2.0,
    }
    ev = eval_metrics(
        [
            {
                "task": "*",
                "model": "step_3",
                "suite": "games",
                "metric": "win_rate",
                "mean": 0.4,
                "delta": 0.1,
                "ci_low": -0.05,
                "ci_high": 0.2,
            },
            {"task": "odd_word", "model": "step_3", "suite": "games", "metric": "win_rate", "mean": 1.0},
        ]
    )
    assert ev == {
        "eval/step_3/games/win_rate": 0.4,
        "eval/step_3/games/win_rate_delta": 0.1,
        "eval/step_3/games/win_rate_low": -0.05,
        "eval/step_3/games/win_rate_high": 0.2,
    }


def test_tensorboard_sink_reads_back(tmp_path: Path) -> None:
    sink = TensorBoardSink(tmp_path / "tb")
    for step in range(3):
        sink.log(step, {"agent/return_mean": 0.1 * step, "envs/learnable_frac": 0.5})
    sink.close()
    scalars = load_scalars(tmp_path / "tb")
    assert [s for s, _ in scalars["agent/return_mean"]] == [0, 1, 2]
    assert scalars["agent/return_mean"][2][1] == pytest.approx(0.2)
    assert scalars["envs/learnable_frac"][0][1] == 0.5


def test_trackio_sink_reads_back(tmp_path: Path) -> None:
    # trackio fixes its storage folder at import time, so this runs in its own interpreter.
    code = """
from spade_async.tracking.sinks import TrackioSink
from trackio.sqlite_storage import SQLiteStorage
import json
sink = TrackioSink("proj", "run1", {"lr": 1e-5})
for step in range(3):
    sink.log(step, {"agent/return_mean": 0.1 * step, "designer/regret_mean": 0.3})
sink.close()
print(json.dumps(SQLiteStorage.get_logs("proj", "run1")))
"""
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    logs = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("[")))
    assert [r["step"] for r in logs] == [0, 1, 2]
    assert logs[1]["agent/return_mean"] == pytest.approx(0.1) and logs[2]["designer/regret_mean"] == 0.3
    assert "Trackio project initialized" not in done.stdout  # the banner is captured


def test_missing_package_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(TrackingError, match="pip install wandb"):
        check_installed(["console", "wandb"])


async def test_pipeline_logs_every_step_to_tensorboard(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1)
    cfg.log.backends = ["tensorboard"]
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    scalars = load_scalars(tmp_path / "run" / "tensorboard")
    assert [s for s, _ in scalars["agent/return_mean"]] == [1, 2, 3, 4]  # counted from 1, as on the console
    assert "envs/learnable_frac" in scalars and "learner/adapter_version" in scalars


def test_wandb_logs_against_the_training_step_so_late_eval_rows_are_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """W&B drops rows logged at a ``step`` below one it has seen; an in-loop eval logs step N
    after later steps. The sink logs the training step as its own x axis instead (wandb is
    not installed here: a recording stand-in for its module checks the calls)."""
    import types

    calls: list[tuple[str, Any, Any]] = []

    class Run:
        def define_metric(self, name: str, step_metric: str | None = None) -> None:
            calls.append(("define", name, step_metric))

        def log(self, data: dict[str, float], step: int | None = None) -> None:
            calls.append(("log", data, step))

    fake = types.ModuleType("wandb")
    fake.init = lambda **kwargs: Run()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    sink = WandbSink("proj", "run1", tmp_path)
    sink.log(5, {"agent/return_mean": 0.5})
    sink.log(3, {"eval/return": 0.2})
    assert calls[:2] == [("define", "train/step", None), ("define", "*", "train/step")]
    assert calls[2:] == [
        ("log", {"agent/return_mean": 0.5, "train/step": 5}, None),
        ("log", {"eval/return": 0.2, "train/step": 3}, None),
    ]
