"""A short run with its sandbox pools remote on two simulated nodes; one pool is killed
mid-step and the run finishes with every planned episode accounted for; the live count is
in every step's metrics, the loss is a ``cluster`` event, and the report counts it. Restarts
are off here so the count stays down (they are tested on the pool, test_remote_pool.py)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.report.data import read_run
from spade_async.report.markdown import summary
from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner, coin_agent
from tests.cluster.test_remote_pool import wait_cpus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STEPS, ENVS, PLAYS = 3, 2, 4
KILL_AT = STEPS * ENVS * PLAYS // 2  # the agent's Nth move: in the middle of step 2


def cluster_config(tmp_path: Path) -> Config:
    pool = tmp_path / "pool"
    pool.mkdir()
    for i in range(ENVS):  # distinct sources: environments are content-addressed
        (pool / f"coin{i}.py").write_text(f"# copy {i}\n{COIN_ENV}")
    return Config.model_validate(
        {
            "run": {"run_dir": str(tmp_path / "run"), "max_steps": STEPS, "checkpoint_every": 10, "device": "cpu"},
            "selfplay": {
                "mode": "fixed",
                "fixed_pool": str(pool),
                "envs_per_step": ENVS,
                "plays": PLAYS,
                "hinted_plays": 0,
                "max_turns": 2,
                "max_off_policy_steps": 1,
            },
            "memory": {"embed_model": "hashing"},
            "sandbox": {"call_timeout_s": 2.0, "spawn_timeout_s": 5.0, "max_children": 8, "warm_children": 0},
            "cluster": {"enabled": True, "sandbox_pools": 2, "pool_cpus": 1.0, "restart_lost_pools": False},
        }
    )


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_run_survives_a_killed_pool_and_accounts_for_every_episode(tmp_path: Path, ray_cluster: object) -> None:
    import ray

    from spade_async.cluster.pool import RemoteSandboxPool

    cfg = cluster_config(tmp_path)
    moves = 0
    killed: list[str] = []
    pipeline_pool: list[RemoteSandboxPool] = []

    def agent(prompt: str, rng: random.Random) -> str:
        nonlocal moves
        moves += 1
        if moves == KILL_AT:  # episodes are open on both pools, waiting for this move
            member = pipeline_pool[0].members[0]
            killed.append(member.name)
            ray.kill(member.actor, no_restart=True)
        return coin_agent(prompt, rng)

    engine = ScriptedEngine(policies={"agent": agent})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert isinstance(pipeline.pool, RemoteSandboxPool)  # the launcher built the remote client
        pipeline_pool.append(pipeline.pool)
        done = await pipeline.run(sync=True)
        assert pipeline.pool.live_pools == 1
    assert done == STEPS and killed
    db = tmp_path / "run" / "run.sqlite"
    played = rows(db, "SELECT count(*) FROM episodes")[0][0]
    errors = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'error'")]
    failed = sum(json.loads(m).get("episodes_failed", 0) for (m,) in rows(db, "SELECT metrics FROM steps"))
    assert errors and all("was lost" in e for e in errors)  # only the killed pool's in-flight work
    assert played + len(errors) == STEPS * ENVS * PLAYS  # nothing lost without a count
    assert failed == len(errors)
    # The steps after the kill played everything on the pool that remains.
    last = rows(db, f"SELECT count(*) FROM episodes WHERE step = {STEPS - 1}")[0][0]
    assert last == ENVS * PLAYS
    live = [
        (m["cluster_pools_live"], m["cluster_pools"])
        for (m,) in ((json.loads(m),) for (m,) in rows(db, "SELECT metrics FROM steps ORDER BY step"))
    ]
    assert live == [(2, 2), (1, 2), (1, 2)]  # killed in step 2
    cluster = rows(db, "SELECT step, message FROM events WHERE kind = 'cluster'")
    assert [(step, killed[0] in m and "lost" in m) for step, m in cluster] == [(1, True)]
    assert "losses: 1; restarts: 0" in summary(read_run(db), db.parent)
    assert wait_cpus(2.0) == 2.0  # the run ended its actors
