"""Sandbox benchmark: the spawn a caller sees (``pool.open`` until the env is ready) with and
without warm children, side by side; step round trip, concurrent throughput and memory per
child; against a cold ``python -c`` start and an in-process call of the same env.

Why these baselines: the cold start is what a sandbox without a zygote costs per env, the
pool without warm children is what every open paid before them (fork + harden + load), and
the in-process call is the floor a step cannot beat. Run: ``python benchmarks/sandbox.py``.
Targets: spawn p50 <= 1 ms with warm children, step round trip p50 <= 0.2 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from results import Recorder  # benchmarks/ is on sys.path: the scripts run as files

from spade_async.config import SandboxConfig
from spade_async.envs.contract import INJECTED
from spade_async.sandbox.pool import SandboxPool

ENV_SOURCE = (Path(__file__).resolve().parents[1] / "tests" / "sandbox" / "envs" / "guess.py").read_text()
ACTION = "\\boxed{5}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def line(name: str, values: list[float], unit: str = "ms") -> float:
    """Print p50 and p99 of ``values``; return the p50."""
    print(f"{name:<34} p50 {pct(values, 0.5):8.3f} {unit}   p99 {pct(values, 0.99):8.3f} {unit}   (n={len(values)})")
    return pct(values, 0.5)


def pss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for row in handle:
            if row.startswith("Pss:"):
                return int(row.split()[1])
    return 0


async def bench_spawn(spawns: int, warm: int, gap_s: float) -> list[float]:
    """``pool.open`` times (ms) for a pool with ``warm`` children ready ahead of need."""
    async with await SandboxPool.start(SandboxConfig(warm_children=warm)) as pool:
        spawn_ms = []
        for _ in range(spawns):
            if gap_s:
                await anyio.sleep(gap_s)  # an episode's length: the refill has finished
            started = time.perf_counter()
            env = await pool.open(ENV_SOURCE)
            spawn_ms.append((time.perf_counter() - started) * 1e3)
            await env.aclose()
        return spawn_ms


async def bench_sandbox(spawns: int, steps: int, concurrency: int, gap_s: float, rec: Recorder) -> None:
    cold = await bench_spawn(spawns, 0, gap_s)
    warm = await bench_spawn(spawns, SandboxConfig().warm_children, gap_s)
    rec.add(
        warm_children=SandboxConfig().warm_children,
        spawn_no_warm_p50_ms=line("spawn as the caller sees it, no warm", cold),
        spawn_warm_p50_ms=line(f"spawn as the caller sees it, {SandboxConfig().warm_children} warm", warm),
    )
    print(f"{'warm / no-warm p50':<34} {pct(warm, 0.5) / pct(cold, 0.5):10.2f}x")
    async with await SandboxPool.start(SandboxConfig(max_children=max(concurrency, 8))) as pool:
        print(f"isolation: {pool.isolation.level} ({', '.join(pool.isolation.active)})")
        async with await pool.open(ENV_SOURCE) as env:
            await env.reset(0)
            step_ms = []
            for _ in range(steps):
                started = time.perf_counter()
                await env.step(ACTION)
                step_ms.append((time.perf_counter() - started) * 1e3)
        rec.add(step_p50_ms=line("sandbox step round trip", step_ms))

        envs = [await pool.open(ENV_SOURCE) for _ in range(concurrency)]
        for env in envs:
            await env.reset(0)
        pss = [pss_kib(env.pid) for env in envs]
        per_env = steps // concurrency

        async def drive(env: object) -> None:
            for _ in range(per_env):
                await env.step(ACTION)  # type: ignore[attr-defined]

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for env in envs:
                tg.start_soon(drive, env)
        elapsed = time.perf_counter() - started
        print(f"{'steps/s with ' + str(concurrency) + ' children':<34} {per_env * concurrency / elapsed:10.0f}")
        rec.add(children=concurrency, steps_per_s=per_env * concurrency / elapsed, pss_mib=statistics.mean(pss) / 1024)
        print(
            f"{'memory per child (PSS)':<34} {statistics.mean(pss) / 1024:10.2f} MiB   "
            f"(zygote PSS {pss_kib(pool._server.process.pid) / 1024:.1f} MiB)"
        )
        for env in envs:
            await env.aclose()


def bench_cold(runs: int) -> float:
    code = (
        "from spade_async.envs.contract import INJECTED\nimport sys\nns = dict(INJECTED)\n"
        f"exec({ENV_SOURCE!r}, ns)\nenv = ns['GuessNumber']()\nenv.reset(0)\nenv.step({ACTION!r})\n"
    )
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - started) * 1e3)
    return line("cold `python -c` start + 1 step", times)


def bench_in_process(steps: int) -> float:
    namespace = dict(INJECTED)
    exec(compile(ENV_SOURCE, "<env>", "exec"), namespace)
    env = namespace["GuessNumber"]()
    env.reset(0)
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        env.step(ACTION)
        times.append((time.perf_counter() - started) * 1e3)
    return line("in-process step call", times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument(
        "--gap-ms", type=float, default=5.0, help="pause before each open (an episode's length; 0 = back to back)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the headline figures here (benchmarks/results.py)")
    args = parser.parse_args()
    rec = Recorder("sandbox", args.json, {k: v for k, v in vars(args).items() if k != "json"})
    anyio.run(bench_sandbox, args.spawns, args.steps, args.concurrency, args.gap_ms / 1e3, rec)
    rec.add(cold_start_p50_ms=bench_cold(args.cold), in_process_step_p50_ms=bench_in_process(args.steps))
    rec.write()


if __name__ == "__main__":
    main()
