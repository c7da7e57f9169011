"""The run layer's owners and the wires between them (issue 53): the checkpointer saves, commits,
announces and prunes, and restores from the newest whole checkpoint; the pipeline only drives a
step through the play round (with its audits), the scorer, the adapter publisher, the
checkpointer and the step log. Each test breaks if its call site is removed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from spade_async.config import Config
from spade_async.memory.run_dir import RunDir
from spade_async.memory.store import Store
from spade_async.run.assemble import _prepare_run_dir, open_run
from spade_async.run.checkpoint import STATE_FILE, TENSORS_FILE, VERSION_FILE
from spade_async.run.checkpointer import Checkpointer, ConfigStamp, checkpoint_problem
from spade_async.run.control import RunControl
from spade_async.run.publisher import AdapterPublisher
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner

pytestmark = pytest.mark.anyio


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def make_config(tmp_path: Path, **run: object) -> Config:
    pool = tmp_path / "pool"
    pool.mkdir(exist_ok=True)
    (pool / "coin.py").write_text(COIN_ENV)
    return Config.model_validate(
        {
            "run": {"run_dir": str(tmp_path / "run"), "max_steps": 3, "checkpoint_every": 1, "device": "cpu", **run},
            "selfplay": {
                "mode": "fixed",
                "envs_per_step": 1,
                "plays": 8,
                "hinted_plays": 0,
                "max_turns": 3,
                "fixed_pool": str(pool),
            },
            "memory": {"embed_model": "hashing"},
            "sandbox": {"call_timeout_s": 2.0, "max_children": 8},
            "engine": {"agent": {"max_new_tokens": 64}},
            "log": {"backends": ["jsonl"]},
        }
    )


class Snapshots:
    """A :class:`~spade_async.run.checkpointer.Restorable` that remembers what it was given."""

    def __init__(self) -> None:
        self.restored: list[dict[str, Any]] = []

    def restore(self, snap: dict[str, Any]) -> None:
        self.restored.append(snap)


async def open_checkpointer(tmp_path: Path, keep: int) -> tuple[Checkpointer, Store]:
    cfg = make_config(tmp_path, keep_checkpoints=keep, max_steps=10)
    folder = RunDir(Path(cfg.run.run_dir))
    folder.path.mkdir(parents=True)
    stamp = ConfigStamp.of(cfg)
    folder.config.write_text(stamp.text)
    store = await Store.open(folder.db)
    await store.start_run("t", stamp.text, None)
    return Checkpointer(folder, store, learner=None, stamp=stamp, run=cfg.run), store


async def test_the_checkpointer_commits_announces_then_prunes(tmp_path: Path) -> None:
    checkpointer, store = await open_checkpointer(tmp_path, keep=2)
    try:
        for step in range(4):
            path = await checkpointer.save(step, {"marker": step})
            assert path == checkpointer.folder.checkpoints / f"step_{step + 1}"
    finally:
        await store.aclose()
    db = checkpointer.folder.db
    assert [p.name for p in checkpointer.folder.checkpoint_dirs()] == ["step_3", "step_4"]  # pruned after commit
    assert [s for (s,) in rows(db, "SELECT step FROM checkpoints ORDER BY step")] == [0, 1, 2, 3]
    events = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'checkpoint' ORDER BY id")]
    assert events[-1] == "checkpoint after step 4: checkpoints/step_4"


@pytest.mark.parametrize("lost", [STATE_FILE, TENSORS_FILE])
async def test_restore_takes_the_newest_whole_checkpoint(tmp_path: Path, lost: str) -> None:
    """A newest checkpoint that lost its state or its tensors file is skipped with a warning, and
    the run resumes from the one before (not a dead end: "tensor 'rng/torch' is missing")."""
    checkpointer, store = await open_checkpointer(tmp_path, keep=3)
    lines: list[str] = []
    target = Snapshots()
    try:
        for step in range(3):
            await checkpointer.save(step, {"marker": step})
        (checkpointer.folder.checkpoints / "step_3" / lost).unlink()  # the newest is damaged
        checkpointer.committed.clear()
        start = await checkpointer.restore(target, ScriptedEngine(), force=False, report=lines.append)
    finally:
        await store.aclose()
    assert start == 2  # after the checkpoint of internal step 1 (step_2)
    assert [snap["marker"] for snap in target.restored] == [1]
    assert any("skipping a damaged checkpoint: checkpoints/step_3" in line for line in lines), lines
    assert checkpointer.committed == {0, 1}  # the rows after the one used are truncated
    assert lines[-1].startswith("resuming at step 3 from the checkpoint after step 2")


def test_a_learner_checkpoint_without_its_adapter_weights_is_not_whole(tmp_path: Path) -> None:
    """The adapter a resume loads into the engine: a checkpoint whose version file says a learner
    wrote it needs its adapter folder, and a PEFT adapter its weights file beside its config."""
    folder = tmp_path / "step_1"
    (folder / "adapter").mkdir(parents=True)
    (folder / STATE_FILE).write_text("{}")
    (folder / TENSORS_FILE).write_bytes(b"")
    (folder / VERSION_FILE).write_text("3\n")
    assert checkpoint_problem(folder) == f"{folder} has no adapter"
    (folder / "adapter" / "adapter_config.json").write_text("{}")
    assert checkpoint_problem(folder) == f"{folder} has no adapter/adapter_model.safetensors"


async def test_the_publisher_writes_loads_and_prunes_adapters(tmp_path: Path) -> None:
    engine, learner = ScriptedEngine(), ScriptedLearner()
    store = await Store.open(tmp_path / "run.sqlite")

    async def before() -> None:
        order.append("before_publish")

    order: list[str] = []
    publisher = AdapterPublisher(
        tmp_path,
        engine=engine,
        learner=learner,
        store=store,
        control=RunControl(),
        report=lambda s: None,
        keep=2,
        probe=None,
        probe_cfg=make_config(tmp_path).engine.probe,
        before_publish=before,
    )
    try:
        for step in range(4):
            learner.version += 1
            assert await publisher.publish(step) == {}
    finally:
        await store.aclose()
    assert order == ["before_publish"] * 4
    assert [v for v, _ in engine.loaded] == [1, 2, 3, 4] and engine.adapter_version == 4
    assert engine.loaded[-1][1] == str(RunDir(tmp_path).adapters / "v4")
    assert sorted(p.name for p in RunDir(tmp_path).adapters.iterdir()) == ["v3", "v4"]


async def test_the_pipeline_drives_publisher_checkpointer_and_step_log(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    engine, learner = ScriptedEngine(), ScriptedLearner()
    calls: list[tuple[str, int]] = []
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        publisher, checkpointer, round_ = pipeline.publisher, pipeline.stages.checkpointer, pipeline.stages.plays
        assert publisher is not None
        publish, save, play = publisher.publish, checkpointer.save, round_.play

        async def published(step: int) -> dict[str, float]:
            calls.append(("publish", step))
            return await publish(step)

        async def saved(step: int, snapshot: dict[str, Any]) -> Path:
            calls.append(("save", step))
            return await save(step, snapshot)

        async def played(step: int, pool: Any) -> Any:
            calls.append(("play", step))
            return await play(step, pool)

        publisher.publish = published  # type: ignore[method-assign]
        checkpointer.save = saved  # type: ignore[method-assign]
        round_.play = played  # type: ignore[method-assign]
        assert await pipeline.run(sync=True) == 3
    assert calls == [(kind, step) for step in range(3) for kind in ("play", "publish", "save")]
    assert engine.adapter_version == learner.version == 3
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in logged] == [1, 2, 3] and logged[-1]["adapter_version"] == 3


async def test_a_stop_from_the_control_ends_the_run_and_checkpoints_its_last_step(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, max_steps=5, checkpoint_every=100)
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        consume = pipeline.consume

        async def stop_after(batch: Any) -> dict[str, float]:
            metrics = await consume(batch)
            pipeline.control.request_stop()
            return metrics

        pipeline.consume = stop_after  # type: ignore[method-assign]
        with anyio.fail_after(120):
            assert await pipeline.run(sync=True) == 1
    assert rows(tmp_path / "run" / "run.sqlite", "SELECT step FROM checkpoints") == [(0,)]


async def test_a_folder_killed_between_its_config_and_its_database_resumes_from_step_1(tmp_path: Path) -> None:
    """A kill after ``config.toml`` is written and before ``run.sqlite`` exists (e2e's random kills
    land there): resume starts the run over in the same folder instead of failing to open it."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(ConfigStamp.of(make_config(tmp_path)).text)
    lines: list[str] = []
    resume, lock = _prepare_run_dir(run_dir, True, lines.append)
    lock.release()
    assert resume is False
    assert lines and "no complete checkpoint yet: starting the run again from step 1" in lines[0]
