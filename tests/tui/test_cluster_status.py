"""The cluster count, end to end without Ray: the real pipeline records live remote pools and
engine replicas per step (spade_async.cluster.status) and each loss as a ``cluster`` event;
the TUI's header shows "cluster: 1/2 pools live, 1/2 replicas live", its event log the
losses, and the report counts them.

The remote pool and engine are stand-ins that are fleets as the real ones are (the
``cluster.status.Fleet`` protocol: ``fleet_name``, ``fleet_size()``, ``events``), handed to the
pipeline as the launcher hands over the fleets it starts. The Ray path itself:
tests/cluster/test_cluster_run.py.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from spade_async.memory.schema import CLUSTER_METRIC_KEYS
from spade_async.report.data import read_run
from spade_async.report.markdown import summary
from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner, coin_agent
from tests.integration.test_pipeline import make_config
from tests.tui.helpers import make_app, settle, text_of

pytestmark = pytest.mark.anyio

LOSE_AT = 3  # the agent's 3rd move: step 2 of 4 (two plays a step)
POOL_LOST = "remote sandbox pool 1 (node n1, pid 7) lost (ActorDiedError); 1 of 2 left"
REPLICA_LOST = "remote engine replica 1 lost (ActorDiedError); 1 of 2 left"


class StandInRemotePool:
    """The local pool behind the attributes of ``RemoteSandboxPool`` that the run's status reads."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.members = ["pool 0", "pool 1"]
        self.lost = 0
        self.events: list[str] = []

    fleet_name = "pools"

    @property
    def live_pools(self) -> int:
        return len(self.members) - self.lost

    def fleet_size(self) -> tuple[int, int]:
        return self.live_pools, len(self.members)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


class ReplicatedEngine(ScriptedEngine):
    """The scripted engine with the attributes of a remote engine (replicas, events)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replicas = 2
        self.live_replicas = 2
        self.events: list[str] = []

    fleet_name = "replicas"

    def fleet_size(self) -> tuple[int, int]:
        return self.live_replicas, self.replicas


@pytest.fixture
async def cluster_db(tmp_path: Path) -> Path:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    moves = 0
    stand_in: list[StandInRemotePool] = []

    def agent(prompt: str, rng: random.Random) -> str:
        nonlocal moves
        moves += 1
        if moves == LOSE_AT:
            stand_in[0].lost = 1
            stand_in[0].events.append(POOL_LOST)
            engine.live_replicas = 1
            engine.events.append(REPLICA_LOST)
        return coin_agent(prompt, rng)

    engine = ReplicatedEngine(policies={"agent": agent})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        stand_in.append(StandInRemotePool(pipeline.pool))
        pipeline.pool = stand_in[0]  # type: ignore[assignment]  # plays go through it
        pipeline.fleets = [stand_in[0], engine]  # what the launcher hands over when it starts remote ones
        assert await pipeline.run(sync=True) == 4
    return tmp_path / "run" / "run.sqlite"


async def test_the_run_records_live_counts_per_step_and_each_loss_once(cluster_db: Path) -> None:
    with sqlite3.connect(cluster_db) as conn:
        metrics = [json.loads(m) for (m,) in conn.execute("SELECT metrics FROM steps ORDER BY step")]
        events = conn.execute("SELECT step, message FROM events WHERE kind = 'cluster' ORDER BY id").fetchall()
    assert set(CLUSTER_METRIC_KEYS) <= set(metrics[0])
    assert [(m["cluster_pools_live"], m["cluster_pools"]) for m in metrics] == [(2, 2), (1, 2), (1, 2), (1, 2)]
    assert [m["cluster_replicas_live"] for m in metrics] == [2, 1, 1, 1]
    assert events == [(1, POOL_LOST), (1, REPLICA_LOST)]  # at the step of the loss, never again


async def test_tui_header_shows_the_live_counts_and_the_log_the_losses(cluster_db: Path) -> None:
    app = make_app(cluster_db)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        header = text_of(app.query_one("#header"))
        assert "cluster: 1/2 pools live, 1/2 replicas live" in header
        log = text_of(app.query_one("#events"))
        assert "cluster" in log and "pool 1 (node n1, pid 7) lost" in log


async def test_report_mentions_the_losses(cluster_db: Path) -> None:
    text = summary(read_run(cluster_db), cluster_db.parent)
    assert "## Cluster" in text and "remote sandbox pools live at the last step: 1 of 2" in text
    assert "losses: 2; restarts: 0" in text and POOL_LOST in text
