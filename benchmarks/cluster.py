"""Cluster benchmark: environment steps/s with 1, 2, 4 remote sandbox pools (Ray actors) in
the same run, and the round trip of one remote step against one local step.

Why these figures: a remote pool is worth having when more pools give more steps/s (each
pool is one process whose event loop drives its children, so a node's pools add up until its
cores run out) and when the extra hop (driver -> actor -> child and back) stays small next to
a turn of generation. The baseline is the local pool, measured in the same run on the same
scripted environment. Everything runs on this machine: the "nodes" are Ray actors on one
private cluster, so the scaling shown is bounded by this machine's cores (say the load).
Run: ``python benchmarks/cluster.py`` (needs the ray extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import anyio

from spade_async.config import ClusterConfig, SandboxConfig

ENV = '''
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


async def main(args: argparse.Namespace) -> None:
    import ray

    from spade_async.cluster.pool import RemoteSandboxPool
    from spade_async.sandbox.pool import SandboxPool

    source = ENV.format(work=args.work)
    sandbox = SandboxConfig(max_children=args.concurrency, warm_children=2)
    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; {args.episodes} episodes x {args.steps} steps, "
          f"{args.concurrency} at once, {args.work} work iterations per step")
    async with await SandboxPool.start(sandbox) as local:
        await episodes(local, source, 2, 2, 2)  # warm-up
        local_rt = await round_trip_ms(local, source, args.round_trips)
        local_sps = await episodes(local, source, args.episodes, args.steps, args.concurrency)
    print(f"{'local pool':<22} {local_sps:9.0f} steps/s   step round trip p50 {local_rt:7.3f} ms")
    pools = [int(p) for p in args.pools.split(",")]
    ray.init(num_cpus=max(pools), include_dashboard=False, object_store_memory=100 * 1024 * 1024,
             log_to_driver=False, configure_logging=False)
    try:
        for n in pools:
            cluster = ClusterConfig(enabled=True, sandbox_pools=n, pool_cpus=1.0)
            async with await RemoteSandboxPool.start(sandbox, cluster) as remote:
                await episodes(remote, source, 2 * n, 2, 2 * n)  # warm-up: every pool
                rt = await round_trip_ms(remote, source, args.round_trips)
                sps = await episodes(remote, source, args.episodes, args.steps, args.concurrency)
            print(f"{f'{n} remote pool(s)':<22} {sps:9.0f} steps/s   step round trip p50 {rt:7.3f} ms   "
                  f"({sps / local_sps:.2f}x local throughput, +{rt - local_rt:.3f} ms per step)")
            for _ in range(300):  # until Ray has released the actors' CPUs (at most a minute)
                if ray.available_resources().get("CPU", 0) >= max(pools):
                    break
                await anyio.sleep(0.2)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="1,2,4", help="remote pool counts to measure, in one run")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16, help="episodes in flight at once")
    parser.add_argument("--work", type=int, default=20000, help="arithmetic iterations per env step (env CPU)")
    parser.add_argument("--round-trips", type=int, default=50)
    anyio.run(main, parser.parse_args())
