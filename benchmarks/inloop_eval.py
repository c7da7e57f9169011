"""What in-loop evaluation costs the learner: the same scripted run with ``eval.every`` off and on.

The production orchestrator, sandbox and SQLite store, with a scripted engine whose every
generate call takes ``gen_s`` (concurrent calls overlap, like a batching server) and a
learner whose step takes ``learn_s``. The run is overlapped (the default). With evaluation
on (every step, ``episodes`` held-out coin flips each, so an evaluation spans several steps'
worth of generation) we report wall time, the learner's idle time between steps, how many
evaluations ran and how many requests were skipped, against the run without evaluation
measured in the same process. The claim checked: evaluation costs generation time, not
learner time: no step waits for an evaluation, so the learner's idle time between steps is
about the same, except once: the first adapter is published only after the base model is
scored (the engine cannot serve the base model afterwards), reported apart.

    python benchmarks/inloop_eval.py [--steps 10] [--gen 0.2] [--learn 0.4] [--episodes 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

from spade_async.config import Config
from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner


def config(tmp: Path, steps: int, every: int, episodes: int) -> Config:
    pool = tmp / "pool"
    pool.mkdir(exist_ok=True)
    (pool / "coin.py").write_text(COIN_ENV)
    (pool / "coin2.py").write_text(COIN_ENV.replace("WeightedCoin", "WeightedCoinTwo"))
    return Config.model_validate(
        {
            "run": {
                "run_dir": str(tmp / f"run-every{every}"),
                "max_steps": steps,
                "checkpoint_every": 1000,
                "device": "cpu",
            },
            "selfplay": {
                "mode": "fixed",
                "envs_per_step": 2,
                "plays": 8,
                "hinted_plays": 0,
                "max_turns": 3,
                "fixed_pool": str(pool),
            },
            "engine": {"agent": {"max_new_tokens": 48}},
            "memory": {"embed_model": "hashing"},
            "eval": {"every": every, "suite": f"envs:{pool}", "episodes": episodes, "concurrency": 4},
        }
    )


async def one(tmp: Path, steps: int, every: int, episodes: int, gen_s: float, learn_s: float) -> dict[str, float]:
    cfg = config(tmp, steps, every, episodes)
    learner = ScriptedLearner(cost_s=learn_s)
    async with open_run(cfg, engine=ScriptedEngine(latency_s=gen_s), learner=learner, report=lambda s: None) as p:
        t0 = time.perf_counter()
        await p.run()
        wall = time.perf_counter() - t0
        evaluated, skipped = len(p.loop_eval.evaluated), p.loop_eval.skipped
    gaps = [b[0] - a[1] for a, b in zip(learner.intervals, learner.intervals[1:], strict=False)]
    # The first gap holds the one deliberate wait: the first adapter goes live after the base is scored.
    return {
        "wall": wall,
        "trained": len(learner.intervals),
        "first": gaps[0],
        "idle": sum(gaps[1:]),
        "evals": evaluated,
        "skipped": skipped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--gen", type=float, default=0.2, help="scripted seconds per generate call")
    parser.add_argument("--learn", type=float, default=0.4, help="scripted learner seconds per step")
    parser.add_argument("--episodes", type=int, default=16, help="held-out episodes per environment per evaluation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        off = anyio.run(one, tmp, args.steps, 0, args.episodes, args.gen, args.learn)
        on = anyio.run(one, tmp, args.steps, 1, args.episodes, args.gen, args.learn)
    print(
        f"scripted engine, {args.steps} steps, {args.gen:.2f}s per generate call, learner {args.learn:.2f}s per step; "
        f"eval: 2 envs x {args.episodes} episodes"
    )
    for name, r in (("eval off", off), ("eval every step", on)):
        print(
            f"  {name:16} wall {r['wall']:6.2f} s | steps trained {r['trained']:.0f} | learner idle: before step 2 "
            f"{r['first']:5.2f} s, between later steps {r['idle']:5.2f} s | evaluations {r['evals']:.0f}, "
            f"skipped {r['skipped']:.0f}"
        )
    print(
        f"  wall ratio on/off {on['wall'] / off['wall']:.2f}x; learner idle after the base score, on - off: "
        f"{on['idle'] - off['idle']:+.2f} s; the one-off base wait, on - off: {on['first'] - off['first']:+.2f} s"
    )


if __name__ == "__main__":
    main()
