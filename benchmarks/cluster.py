"""Cluster benchmark: environment steps/s with 1, 2, 4 remote sandbox pools (Ray actors), each
on a simulated node of its own, against the local pool in the same run; and the round trip
of one remote step against one local step.

Two workloads, because they scale for different reasons:

- ``cpu``: every step burns arithmetic. On one machine the simulated nodes share its cores,
  so pools cannot add throughput here (the row is kept because it is the honest figure for
  this machine); CPU-bound growth needs nodes with cores of their own.
- ``wait``: every step waits (``time.sleep``, like an env that calls a slow tool) and each
  pool has a bounded capacity, ``--children`` env children (``sandbox.max_children``), as a
  real node has. Throughput then grows with pools because each pool adds capacity, not CPU;
  the ideal is ``pools x children / wait`` steps/s, printed beside the measured figure.

The nodes are Ray's own cluster utilities (``ray.cluster_utils.Cluster``, one CPU per node,
so a 1-CPU pool lands alone on each); everything runs on this machine (say the load).
Run: ``python benchmarks/cluster.py`` (needs the ray extra; about 2-3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import anyio

from spade_async.config import ClusterConfig, SandboxConfig

CPU_ENV = '''
class Counter(GameEnv):
    """Scripted: every step burns WORK iterations of arithmetic, then counts; never ends early."""
    WORK = {work}

    def reset(self, seed=None):
        self.n = 0
        return "count", {{}}

    def step(self, action):
        acc = 0
        for i in range(self.WORK):
            acc += i * i
        self.n += 1
        return f"n={{self.n}} acc={{acc % 7}}", 0.0, False, False, {{}}
'''

WAIT_ENV = '''
import time


class Waiter(GameEnv):
    """Scripted: every step waits WAIT_S (a slow tool, a remote call), then counts."""
    WAIT_S = {wait_s}

    def reset(self, seed=None):
        self.n = 0
        return "wait", {{}}

    def step(self, action):
        time.sleep(self.WAIT_S)
        self.n += 1
        return f"n={{self.n}}", 0.0, False, False, {{}}
'''

MIB = 1024 * 1024


async def episodes(pool: Any, source: str, count: int, steps: int, concurrency: int) -> float:
    """Play ``count`` episodes of ``steps`` steps, ``concurrency`` at a time; return steps/s."""
    limiter = anyio.CapacityLimiter(concurrency)

    async def one() -> None:
        async with limiter, await pool.open(source) as env:
            await env.reset(0)
            for _ in range(steps):
                await env.step("\\boxed{1}")

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(one)
    return count * steps / (time.perf_counter() - t0)


async def round_trip_ms(pool: Any, source: str, n: int) -> float:
    """Median of ``n`` sequential step round trips on one env (ms)."""
    async with await pool.open(source) as env:
        await env.reset(0)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await env.step("\\boxed{1}")
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def wait_cpus(expected: float) -> None:
    """Until Ray has released the actors' CPUs (released asynchronously; at most a minute)."""
    import ray

    for _ in range(300):
        if ray.available_resources().get("CPU", 0) >= expected:
            return
        await anyio.sleep(0.2)


async def workload(
    title: str,
    source: str,
    sandbox: SandboxConfig,
    pools: list[int],
    args: argparse.Namespace,
    concurrency: int,
    ideal: float | None,
) -> None:
    from spade_async.cluster.pool import RemoteSandboxPool
    from spade_async.sandbox.pool import SandboxPool

    print(
        f"\n{title}: {args.episodes} episodes x {args.steps} steps, {concurrency} offered at once, "
        f"sandbox.max_children = {sandbox.max_children} per pool"
    )
    ideal_col = "" if ideal is None else "  ideal steps/s"
    print(f"{'':<18} {'steps/s':>9}{ideal_col}  step round trip p50")

    def row(label: str, sps: float, rt: float, capacity: int, extra: str = "") -> None:
        ideal_txt = "" if ideal is None else f"  {capacity * ideal:13.0f}"
        print(f"{label:<18} {sps:9.0f}{ideal_txt}  {rt:8.2f} ms{extra}")

    async with await SandboxPool.start(sandbox) as local:
        await episodes(local, source, 2, 2, 2)  # warm-up
        local_rt = await round_trip_ms(local, source, args.round_trips)
        local_sps = await episodes(local, source, args.episodes, args.steps, concurrency)
    row("local pool", local_sps, local_rt, 1)
    for n in pools:
        cluster = ClusterConfig(enabled=True, sandbox_pools=n, pool_cpus=1.0, restart_lost_pools=False)
        async with await RemoteSandboxPool.start(sandbox, cluster) as remote:
            await episodes(remote, source, 2 * n, 2, 2 * n)  # warm-up: every pool
            rt = await round_trip_ms(remote, source, args.round_trips)
            sps = await episodes(remote, source, args.episodes, args.steps, concurrency)
        row(f"{n} remote pool(s)", sps, rt, n, f"   {sps / local_sps:.2f}x local, +{rt - local_rt:.2f} ms per step")
        await wait_cpus(max(pools))


async def main(args: argparse.Namespace) -> None:
    import ray
    from ray.cluster_utils import Cluster

    pools = [int(p) for p in args.pools.split(",")]
    t0 = time.perf_counter()
    node: dict[str, Any] = {"num_cpus": 1, "object_store_memory": 80 * MIB}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    for _ in range(max(pools) - 1):
        cluster.add_node(**node)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    print(
        f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; "
        f"{max(pools)} simulated Ray nodes of 1 CPU each (started in {time.perf_counter() - t0:.0f} s)"
    )
    try:
        if "cpu" in args.workloads:
            await workload(
                f"cpu-bound ({args.work} arithmetic iterations per step)",
                CPU_ENV.format(work=args.work),
                SandboxConfig(max_children=args.concurrency, warm_children=2),
                pools,
                args,
                args.concurrency,
                None,
            )
        if "wait" in args.workloads:
            wait_s = args.wait_ms / 1000
            await workload(
                f"waiting ({args.wait_ms:g} ms sleep per step)",
                WAIT_ENV.format(wait_s=wait_s),
                SandboxConfig(max_children=args.children, warm_children=min(args.children, 4)),
                pools,
                args,
                args.children * max(pools),
                args.children / wait_s,
            )
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="1,2,4", help="remote pool counts to measure, in one run")
    parser.add_argument("--workloads", default="cpu,wait", help="cpu, wait or both")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16, help="cpu workload: episodes in flight at once")
    parser.add_argument("--work", type=int, default=20000, help="cpu workload: arithmetic iterations per step")
    parser.add_argument("--wait-ms", type=float, default=20.0, help="wait workload: sleep per step (ms)")
    parser.add_argument(
        "--children", type=int, default=4, help="wait workload: sandbox.max_children per pool (and of the local pool)"
    )
    parser.add_argument("--round-trips", type=int, default=50)
    anyio.run(main, parser.parse_args())
