"""Issue 25's done-when: the tiny preset with the engine AND the sandbox pools remote on two
simulated nodes (Ray's cluster utilities); one engine replica and one sandbox pool are killed
mid-step; the run finishes every step, the engine's lost requests are retried (no episode is
lost to that kill), the pool's in-flight episodes are counted as errors, every planned episode
is accounted for, and no actor is left."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from spade_async.config import load_config
from spade_async.engine.base import Completion, GenerationRequest
from spade_async.run.assemble import open_run
from spade_async.testing import LOTTERY_ENV
from tests.cluster.test_remote_pool import wait_cpus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
STEPS, ENVS, PLAYS = 3, 2, 4
KILL_AT = ENVS * PLAYS + ENVS * PLAYS // 2  # the agent's Nth turn: a lottery episode is one turn, so mid step 2


def overrides(tmp_path: Path, model: Path) -> list[str]:
    pool = tmp_path / "pool"
    pool.mkdir()
    for i in range(ENVS):  # distinct sources: environments are content-addressed
        (pool / f"lottery{i}.py").write_text(f"# copy {i}\n{LOTTERY_ENV}")
    values = {
        "model.name": f'"{model}"',
        "run.run_dir": f'"{tmp_path / "run"}"',
        "run.max_steps": str(STEPS),
        "run.checkpoint_every": "10",
        "selfplay.fixed_pool": f'"{pool}"',
        "selfplay.envs_per_step": str(ENVS),
        "selfplay.skills_per_regen": "1",
        "selfplay.plays": str(PLAYS),
        "selfplay.hinted_plays": "0",
        "selfplay.max_turns": "2",
        "selfplay.repair_turns": "0",
        "selfplay.separate_hint_call": "false",
        "engine.designer.max_new_tokens": "24",
        "engine.hint.max_new_tokens": "8",
        "engine.agent.max_new_tokens": "4",
        "corpus.max_chars": "200",
        "memory.embed_model": '"hashing"',
        "warmstart.enabled": "false",  # the shipped warm start is the embedded model's, not the tiny model's
        "sandbox.call_timeout_s": "5.0",
        "sandbox.spawn_timeout_s": "10.0",
        "sandbox.warm_children": "0",
        "cluster.enabled": "true",
        "cluster.sandbox_pools": "2",
        "cluster.pool_cpus": "0.5",
        "cluster.engine_replicas": "2",
        "cluster.engine_cpus": "0.5",
        "cluster.start_timeout_s": "240.0",
        "cluster.restart_lost_pools": "false",  # restarts have their own test (test_remote_pool.py)
    }
    return [f"{k}={v}" for k, v in values.items()]


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_tiny_run_with_remote_engine_and_pools_survives_killing_one_of_each(
    tmp_path: Path, tiny_model_dir: Path, ray_cluster: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    from spade_async.cluster.engine import RemoteEngine
    from spade_async.cluster.pool import RemoteSandboxPool

    t0 = time.perf_counter()
    cfg = load_config(ROOT / "configs" / "tiny.toml", overrides(tmp_path, tiny_model_dir))
    turns = 0
    killed: list[str] = []
    lines: list[str] = []
    async with open_run(cfg, report=lines.append) as pipeline:
        engine, pool = pipeline.engine, pipeline.pool
        assert isinstance(engine, RemoteEngine) and isinstance(pool, RemoteSandboxPool)  # the launcher built both
        assert sum(line.startswith("cluster: engine replica") for line in lines) == 2
        generate = engine.generate

        async def killing_generate(requests: list[GenerationRequest]) -> list[Completion]:
            nonlocal turns
            if requests[0].role == "agent":
                turns += 1
                if turns == KILL_AT:  # episodes are in flight on both replicas and both pools
                    replica = engine.replica_for(str(requests[0].affinity))  # the one this very turn is sent to
                    killed.extend([replica.name, pool.members[0].name])
                    ray.kill(replica.actor, no_restart=True)
                    ray.kill(pool.members[0].actor, no_restart=True)
            return await generate(requests)

        monkeypatch.setattr(engine, "generate", killing_generate)
        done = await pipeline.run(sync=True)
        live = (engine.live_replicas, engine.replicas, pool.live_pools)
        retries, events, adapter = engine.retries, list(engine.events), engine.adapter_version
    wall = time.perf_counter() - t0
    assert done == STEPS and len(killed) == 2
    assert live == (1, 2, 1) and len(events) == 1 and "lost" in events[0]
    assert retries > 0  # the killed replica's requests went to the other one
    assert adapter >= 1  # the learner's adapters reached the replicas (by content)
    db = tmp_path / "run" / "run.sqlite"
    played = rows(db, "SELECT count(*) FROM episodes")[0][0]
    errors = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'error'")]
    failed = sum(json.loads(m).get("episodes_failed", 0) for (m,) in rows(db, "SELECT metrics FROM steps"))
    assert all("remote sandbox pool" in e and "was lost" in e for e in errors), errors  # none lost to the engine
    assert played + len(errors) == STEPS * ENVS * PLAYS  # every planned episode accounted for
    assert failed == len(errors)
    per_step = [json.loads(m) for (m,) in rows(db, "SELECT metrics FROM steps ORDER BY step")]
    assert [(m["cluster_replicas_live"], m["cluster_pools_live"]) for m in per_step] == [(2, 2), (1, 1), (1, 1)]
    lost = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'cluster'")]  # what the TUI's log shows
    assert len(lost) == 2 and any("engine replica" in m for m in lost) and any("sandbox pool" in m for m in lost), lost
    versions = {v for (v,) in rows(db, "SELECT DISTINCT adapter_version FROM episodes")}
    assert max(versions) >= 1  # episodes were played with the adapters the replicas loaded
    assert wait_cpus(2.0) == 2.0  # the run ended every actor, the killed ones included
    print(
        f"\ndone-when run: {wall:.1f} s, {played} episodes recorded + {len(errors)} errored = "
        f"{STEPS * ENVS * PLAYS} planned, {retries} engine request(s) retried, killed {killed}"
    )
