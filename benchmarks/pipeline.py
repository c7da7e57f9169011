"""Async overlap vs the sequential loop, measured side by side in one run.

Part 1, scripted: the production orchestrator, sandbox and SQLite store, with an engine whose
generation costs ``gen_s`` per step and a learner whose step costs ``learn_s`` (equal by
default). The ideal speed-up of overlapping two equal stages over N steps is
``N (g + l) / (N max(g, l) + min(g, l))`` (-> 2x for large N); we report the achieved
fraction of it and the generator's busy fraction in async mode.

Part 2, real: the tiny random model with the real HF engine and GRPO trainer on the seed
environments, sync then async. On a 2-core CPU both stages compete for the same cores, so
expect little gain there; the figure is printed for honesty, not as a target.

    python benchmarks/pipeline.py [--steps 10] [--gen 1.0] [--learn 1.0] [--skip-real] [--json PATH]

``--json PATH`` also writes the headline figures for the README's table (``make bench``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio
from results import Recorder  # benchmarks/ is on sys.path: the scripts run as files

from spade_async.config import Config
from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner


def config(run_dir: Path, steps: int, pool: Path | None, **selfplay: object) -> Config:
    sp: dict[str, object] = {
        "mode": "fixed",
        "envs_per_step": 2,
        "plays": 4,
        "hinted_plays": 4,
        "regen_every": 4,
        "max_turns": 3,
    }
    if pool is not None:
        sp["fixed_pool"] = str(pool)
    sp.update(selfplay)
    return Config.model_validate(
        {
            "run": {"run_dir": str(run_dir), "max_steps": steps, "checkpoint_every": 1000, "device": "cpu"},
            "selfplay": sp,
            "engine": {"agent": {"max_new_tokens": 48}},
            "learner": {"micro_batch": 8, "max_seq_len": 512},
            "model": {"lora_rank": 8, "lora_alpha": 16, "lora_targets": ["q_proj", "v_proj"]},
            "memory": {"embed_model": "hashing"},
        }
    )


def merged_busy(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


async def scripted(tmp: Path, steps: int, gen_s: float, learn_s: float, sync: bool) -> tuple[float, float]:
    pool = tmp / "pool"
    pool.mkdir(exist_ok=True)
    (pool / "coin.py").write_text(COIN_ENV)
    (pool / "coin2.py").write_text(COIN_ENV.replace("WeightedCoin", "WeightedCoinTwo"))
    # 2 envs x 8 plain plays: a step without GRPO signal (all outcomes tied) is ~1e-4 likely.
    cfg = config(tmp / f"scripted-{'sync' if sync else 'async'}", steps, pool, plays=8, hinted_plays=4)
    engine = ScriptedEngine(latency_s=gen_s)
    learner = ScriptedLearner(cost_s=learn_s)
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        t0 = time.perf_counter()
        await pipeline.run(sync=sync)
        wall = time.perf_counter() - t0
    if len(learner.intervals) != steps:
        raise SystemExit(f"only {len(learner.intervals)} of {steps} steps trained; the comparison would be unfair")
    return wall, merged_busy(engine.busy_intervals) / wall


async def real(tmp: Path, steps: int, sync: bool) -> float:
    from spade_async.engine.hf import HFEngine
    from spade_async.learner.trainer import Trainer
    from spade_async.testing.tiny import build_tiny_model

    model = build_tiny_model()
    cfg = config(tmp / f"real-{'sync' if sync else 'async'}", steps, None, plays=4, hinted_plays=2, max_turns=3)
    engine = HFEngine(model, seed=0, batch_size=16)
    learner = Trainer(str(model), cfg.model, cfg.learner, device="cpu", seed=0)
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        t0 = time.perf_counter()
        await pipeline.run(sync=sync)
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--gen", type=float, default=1.0, help="scripted generation seconds per step")
    parser.add_argument("--learn", type=float, default=1.0, help="scripted learner seconds per step")
    parser.add_argument("--real-steps", type=int, default=4)
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="also write the headline figures here (benchmarks/results.py)")
    args = parser.parse_args()
    rec = Recorder("pipeline", args.json, {k: v for k, v in vars(args).items() if k != "json"})
    n, g, lcost = args.steps, args.gen, args.learn
    ideal = n * (g + lcost) / (n * max(g, lcost) + min(g, lcost))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sync_wall, _ = anyio.run(scripted, tmp, n, g, lcost, True)
        async_wall, busy = anyio.run(scripted, tmp, n, g, lcost, False)
        speedup = sync_wall / async_wall
        print(f"scripted engine, {n} steps, generation {g:.2f}s + learner {lcost:.2f}s per step")
        print(f"  sync  wall {sync_wall:7.2f} s")
        print(f"  async wall {async_wall:7.2f} s")
        print(f"  speed-up   {speedup:7.2f}x  (ideal {ideal:.2f}x for {n} steps, 2x asymptotic)")
        print(f"  achieved   {speedup / ideal:7.1%} of ideal   [target >= 90%]")
        print(f"  generator busy (async) {busy:6.1%}   [target >= 90%]")
        rec.add(steps=n, speedup=speedup, ideal=ideal, of_ideal=speedup / ideal, generator_busy=busy)
        if not args.skip_real:
            rs = anyio.run(real, tmp, args.real_steps, True)
            ra = anyio.run(real, tmp, args.real_steps, False)
            print(f"real tiny model (HF engine + GRPO trainer, CPU), {args.real_steps} steps")
            print(f"  sync {rs:.1f} s, async {ra:.1f} s, speed-up {rs / ra:.2f}x (both stages share 2 cores)")
            rec.add(real_steps=args.real_steps, real_sync_s=rs, real_async_s=ra, real_speedup=rs / ra)
    rec.write()


if __name__ == "__main__":
    main()
