"""The adapter probe for real (tiny model, HF engine, LoRA learner): it passes on an engine that
loads each adapter, and an engine that drops the loads while reporting the new version fails it
-- in the probe itself and, through the run's call site, as events, a red TUI metric and a stop."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from spade_async.adapter_check import AdapterProbe
from spade_async.adapter_check.probe import MIN_CHANGE
from spade_async.config import LearnerConfig, ModelConfig, load_config
from spade_async.engine.hf import HFEngine
from spade_async.learner.trainer import Trainer
from spade_async.memory.schema import PROBE_METRIC_KEYS
from spade_async.run.assemble import open_run
from tests.e2e.test_kill_resume import LOTTERY, overrides
from tests.integration.test_bf16 import _samples

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


class DroppingEngine(HFEngine):
    """Reports every adapter it is given and serves none of them (the stale-adapter bug)."""

    async def load_adapter(self, version: int, path: str) -> None:
        self.adapter_version = version


async def _train_and_load(learner: Trainer, engine: HFEngine, tmp: Path, seed: int) -> int:
    learner.train_step(_samples(4, seed=seed))
    learner.save_adapter(tmp / f"v{learner.version}")
    await engine.load_adapter(learner.version, str(tmp / f"v{learner.version}"))
    return learner.version


@pytest.mark.parametrize("engine_cls", [HFEngine, DroppingEngine])
async def test_the_probe_tells_a_live_engine_from_one_that_drops_loads(tiny_model_dir, tmp_path, engine_cls):
    learner = Trainer(str(tiny_model_dir), ModelConfig(lora_rank=8, lora_alpha=16), LearnerConfig(lr=2e-2), seed=0)
    engine = engine_cls(tiny_model_dir, seed=0)
    probe = AdapterProbe(engine, learner)
    results = []
    for seed in (1, 2, 3):
        version = await _train_and_load(learner, engine, tmp_path, seed)
        results.append(await probe.check(version))
    assert [r.reported for r in results] == [1, 2, 3]  # both engines report what they were given
    if engine_cls is HFEngine:
        assert all(r.ok for r in results), [r.problem for r in results]
        assert max(r.gap_mean for r in results) < 1e-3  # float32 on both sides: the same numbers
    else:
        assert not all(r.ok for r in results[1:]), results
        assert all(r.learner_moved is not None and r.learner_moved > MIN_CHANGE for r in results[1:])
        assert any("did not take effect" in (r.problem or "") or "not serving" in (r.problem or "") for r in results)


async def test_a_run_whose_engine_drops_loads_records_mismatches_and_stops(tiny_model_dir, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "lottery.py").write_text(LOTTERY)
    sets = [
        *overrides(tmp_path / "run", pool, tiny_model_dir)[1::2],
        "run.max_steps=10",
        "learner.lr=2e-2",
        "engine.probe.stop_after=2",
    ]
    cfg = load_config(ROOT / "configs" / "tiny.toml", sets)
    lines: list[str] = []
    async with open_run(cfg, engine=DroppingEngine(tiny_model_dir, seed=0), report=lines.append) as pipeline:
        assert pipeline.publisher is not None and pipeline.publisher.probe is not None  # a built learner: probed
        done = await pipeline.run(sync=True)  # a stop lands after the step that asked for it
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        kinds = [k for (k,) in db.execute("SELECT kind FROM events ORDER BY id")]
        probe_ok = [
            v
            for (v,) in db.execute("SELECT json_extract(metrics, '$.probe_ok') FROM steps ORDER BY step")
            if v is not None
        ]
        written = set().union(*(json.loads(m) for (m,) in db.execute("SELECT metrics FROM steps")))
    assert set(PROBE_METRIC_KEYS) <= written  # the keys the TUI's contract names for the probe
    assert kinds.count("adapter_mismatch") >= 2 and kinds.count("adapter_stop") == 1, kinds
    assert done < 10, f"the run went on after the probe failed twice in a row: {kinds}"
    assert probe_ok and probe_ok[-1] == 0.0
    assert any(line.startswith("stopping: 2 adapter probes in a row failed") for line in lines), lines[-5:]
