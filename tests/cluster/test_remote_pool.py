"""Remote sandbox pools (Ray actors on two simulated nodes) behind the local pool's interface."""

from __future__ import annotations

import time

import anyio
import pytest

from spade_async.cluster.pool import RemoteEnv, RemoteSandboxPool
from spade_async.config import ClusterConfig, SandboxConfig
from spade_async.sandbox.errors import EnvCrashed, IsolationTooLow, SandboxError
from spade_async.testing import COIN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SANDBOX = SandboxConfig(call_timeout_s=2.0, spawn_timeout_s=5.0, max_children=4, warm_children=0)
CLUSTER = ClusterConfig(enabled=True, sandbox_pools=2, pool_cpus=1.0, start_timeout_s=120.0)
NO_RESTART = CLUSTER.model_copy(update={"restart_lost_pools": False})

RAISES_ON_STEP = """
class Boom(GameEnv):
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        raise ValueError("boom from the env")
"""


def free_cpus() -> float:
    import ray

    return float(ray.available_resources().get("CPU", 0.0))


def wait_cpus(expected: float, within_s: float = 30.0) -> float:
    """Free CPUs once Ray has released the actors' reservations (released asynchronously)."""
    deadline = time.monotonic() + within_s
    while free_cpus() < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return free_cpus()


async def kill_for_sure(actor: object, within_s: float = 30.0) -> None:
    """``ray.kill`` and wait until the actor is gone: the kill is asynchronous, so a call made
    right after it may still be served (seen in a full-suite run)."""
    import ray

    ray.kill(actor, no_restart=True)
    with anyio.fail_after(within_s):
        while True:
            try:
                await actor.info.remote()  # type: ignore[attr-defined]
            except ray.exceptions.RayActorError:
                return
            await anyio.sleep(0.05)


async def test_envs_run_on_pools_spread_over_nodes_with_local_error_types(ray_cluster: object) -> None:
    async with await RemoteSandboxPool.start(SANDBOX, CLUSTER) as pool:
        assert len({m.node for m in pool.members}) == 2  # one pool per simulated node
        assert pool.isolation.meets(SANDBOX.min_isolation)
        envs = [await pool.open(COIN_ENV), await pool.open(COIN_ENV)]
        assert {id(e._member) for e in envs} == {id(m) for m in pool.members}  # least busy pool first
        for env in envs:
            obs, _ = await env.reset(3)
            assert "heads" in obs.lower()
            result = await env.step("\\boxed{heads}")
            assert result.terminated and result.reward in (0.0, 1.0)
            await env.aclose()
        assert pool.live == 0
        facts = await pool.inspect(COIN_ENV)
        assert "WeightedCoin" in str(facts)
        boom = await pool.open(RAISES_ON_STEP)
        await boom.reset(0)
        with pytest.raises(EnvCrashed, match="boom from the env"):
            await boom.step("x")
        with pytest.raises(SandboxError, match="byte limit"):
            await pool.open("#" * (SANDBOX.max_source_bytes + 1))
    assert wait_cpus(2.0) == 2.0  # both actors ended


async def test_a_killed_pool_costs_its_in_flight_env_only(ray_cluster: object) -> None:

    async with await RemoteSandboxPool.start(SANDBOX, NO_RESTART) as pool:
        doomed, kept = await pool.open(COIN_ENV), await pool.open(COIN_ENV)
        await doomed.reset(1)
        await kept.reset(1)
        await kill_for_sure(doomed._member.actor)
        with pytest.raises(EnvCrashed, match="was lost"):
            await doomed.step("\\boxed{heads}")
        assert (await kept.step("\\boxed{heads}")).terminated  # the other pool serves on
        assert pool.live_pools == 1 and "lost" in pool.events[0]
        again = await pool.open(COIN_ENV)  # new envs go to the pool that remains
        assert again._member is kept._member
        await again.aclose()
        await kept.aclose()
    assert wait_cpus(2.0) == 2.0


async def test_a_node_below_the_required_isolation_refuses_and_leaves_no_actor(ray_cluster: object) -> None:
    weak = SandboxConfig(**{**SANDBOX.model_dump(), "min_isolation": "landlock"})
    with pytest.raises(IsolationTooLow, match=r"on node .*landlock"):
        await RemoteSandboxPool.start(weak, CLUSTER, disable=frozenset({"landlock"}))
    assert wait_cpus(2.0) == 2.0


async def settled(pool: RemoteSandboxPool, within_s: float = 90.0) -> None:
    """Poll until no replacement is starting any more (answered, refused or given up)."""
    with anyio.fail_after(within_s):
        while True:
            pool.poll()
            if not pool.restarting:
                return
            await anyio.sleep(0.2)


async def play_one(pool: RemoteSandboxPool) -> RemoteEnv:
    env = await pool.open(COIN_ENV)
    await env.reset(2)
    assert (await env.step("\\boxed{heads}")).terminated
    return env


async def test_a_lost_pool_is_restarted_refused_below_isolation_and_bounded(ray_cluster: object) -> None:

    cluster = CLUSTER.model_copy(update={"max_pool_restarts": 2})
    async with await RemoteSandboxPool.start(SANDBOX, cluster) as pool:
        doomed = await pool.open(COIN_ENV)
        await doomed.reset(1)
        first = doomed._member
        await kill_for_sure(first.actor)
        with pytest.raises(EnvCrashed, match="was lost"):  # in-flight work is an error, as before
            await doomed.step("\\boxed{heads}")
        assert pool.restarts == 1 and pool.restarting == 1
        with anyio.fail_after(90):  # Ray starts it in the background; nothing here polls the pool
            while True:
                if pool._pending[0].started.done():
                    break
                await anyio.sleep(0.2)
        assert pool.members[first.index] is first  # not taken in until the pool looks
        envs = [await play_one(pool), await play_one(pool)]  # open looks: new envs reach the replacement
        replacement = pool.members[first.index]
        assert replacement is not first and replacement.lost is None and pool.live_pools == 2
        assert any(e._member is replacement for e in envs)
        assert "restarted as remote sandbox pool" in pool.events[-1] and "restart 1 of at most 2" in pool.events[-1]
        on_replacement = next(e for e in envs if e._member is replacement)

        # The next replacement lands on a node below min_isolation: it refuses, the pool stays lost.
        pool.cfg = SandboxConfig(**{**SANDBOX.model_dump(), "min_isolation": "landlock"})
        pool._disable = frozenset({"landlock"})
        await kill_for_sure(replacement.actor)
        with pytest.raises(EnvCrashed):
            await on_replacement.reset(0)
        assert pool.restarts == 2
        await settled(pool)
        assert pool.members[first.index] is replacement and pool.live_pools == 1
        assert "not restarted: on node" in pool.events[-1] and "landlock" in pool.events[-1]
        assert "not restarted" in (replacement.lost or "")

        # The bound: the last pool is lost for good, and opening says every pool was lost.
        other = next(m for m in pool.members if m.lost is None)
        kept = next(e for e in envs if e._member is other)
        await kill_for_sure(other.actor)
        with pytest.raises(EnvCrashed):
            await kept.reset(0)
        assert pool.restarts == 2 and pool.restarting == 0 and pool.live_pools == 0
        assert "max_pool_restarts = 2 reached" in pool.events[-1]
        with pytest.raises(SandboxError, match="every remote sandbox pool was lost"):
            await pool.open(COIN_ENV)
    assert wait_cpus(2.0) == 2.0  # the replacements ended with the pool


async def test_closing_the_pool_ends_a_replacement_still_starting(ray_cluster: object) -> None:

    async with await RemoteSandboxPool.start(SANDBOX, CLUSTER) as pool:
        env = await pool.open(COIN_ENV)
        await kill_for_sure(env._member.actor)
        with pytest.raises(EnvCrashed):
            await env.reset(0)
        assert pool.restarting == 1  # asked for, not looked at yet
    assert pool.restarting == 0
    assert wait_cpus(2.0) == 2.0  # the replacement's CPU is free: it was killed, not left behind
