"""Remote sandbox pools (Ray actors on two simulated nodes) behind the local pool's interface."""

from __future__ import annotations

import time

import pytest

from spade_async.cluster.pool import RemoteSandboxPool
from spade_async.config import ClusterConfig, SandboxConfig
from spade_async.sandbox.errors import EnvCrashed, IsolationTooLow, SandboxError
from spade_async.testing import COIN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SANDBOX = SandboxConfig(call_timeout_s=2.0, spawn_timeout_s=5.0, max_children=4, warm_children=0)
CLUSTER = ClusterConfig(enabled=True, sandbox_pools=2, pool_cpus=1.0, start_timeout_s=120.0)

RAISES_ON_STEP = '''
class Boom(GameEnv):
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        raise ValueError("boom from the env")
'''


def free_cpus() -> float:
    import ray

    return float(ray.available_resources().get("CPU", 0.0))


def wait_cpus(expected: float, within_s: float = 30.0) -> float:
    """Free CPUs once Ray has released the actors' reservations (released asynchronously)."""
    deadline = time.monotonic() + within_s
    while free_cpus() < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return free_cpus()


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
    import ray

    async with await RemoteSandboxPool.start(SANDBOX, CLUSTER) as pool:
        doomed, kept = await pool.open(COIN_ENV), await pool.open(COIN_ENV)
        await doomed.reset(1)
        await kept.reset(1)
        ray.kill(doomed._member.actor, no_restart=True)
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
