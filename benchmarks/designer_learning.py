"""Does the designer get better from its reward? The main job over several seeds, by third of the run.

Why the main job itself: a benchmark that calls the designer directly skips what the run does to
a design (the copy rule against memory, the prompt and the library; duplicates in a generation;
the hint), so it can count designs the run would reject. Here each seed is a real
``spade-async run CONFIG --headless`` (``configs/tiny.toml`` by default: ``make run``'s job) and
every figure is read back from its database: the run's own verdict on every design is its
``admitted`` or ``rejected`` event (copies included: they are not recorded as environments), the
nearest shipped file and its ratio are in the ``admitted`` event, the designer's reward in the
environments table.

Per third of each run (its generations split in order into three parts; with 4 generations:
1-2, 3, 4), over all seeds: the admitted fraction, the fresh fraction (designs of the ``fresh``
origin that were admitted, over all designs), the admitted fraction of mutations and of fresh
designs apart (a mutation is admitted far more often than a fresh design, so a third's mix of the
two moves its admitted fraction as much as any learning), the mean designer reward (the raw reward before
centring is not stored: this is the stored, skill-centred one) and the median similarity of the
admitted designs to the nearest shipped file, and how many designs the run rejected as near-copies
of a shipped file (``selfplay.max_library_similarity``). Then last third minus first third of the
admitted fraction, paired by seed: the mean of the per-seed differences with a 95% interval
from a bootstrap that resamples seeds and, inside each seed, the designs of each third
(10,000 draws), and the per-seed differences themselves.

The same difference within skill and origin: a third's designs are not the same kind of design in
every third (a generation asks for two skills from a shuffled cycle of six, so the second third is
always the two the first left over, and one prompt of each generation is a mutation), and the warm
start admits some kinds far more often than others (mutations of one skill at 7 in 12, fresh
designs of another never). So each design is also counted as admitted minus the admitted rate of
its skill and origin over every design of the benchmark (every seed, every third), and last third
minus first third is taken of those residuals (the same bootstrap, the rates held fixed). A
designer that gets better from its reward raises this figure whatever kinds each third drew.

Usage: ``python benchmarks/designer_learning.py [--config tiny] [--seeds 0,1,2]
[--runs-dir runs/designer-learning] [--reuse SEED=RUN_DIR ...] [--set KEY=VALUE ...] [--json FILE]``. A seed whose run
folder already holds a finished run is read, not run again (``--reuse 0=runs/tiny-...`` reads a
``make run`` folder as seed 0).
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from results import Recorder  # benchmarks/ is on sys.path: the scripts run as files

ROOT = Path(__file__).resolve().parents[1]

DESIGN = re.compile(r"^(?:env (?P<env>\w+) )?(?P<skill>[A-Za-z ]+) \((?P<origin>\w+)\)")
NEAREST = re.compile(r"nearest library file (?P<name>\S+) \((?P<ratio>[0-9.]+)\)")


@dataclass(frozen=True)
class DesignVerdict:
    """One design as the run judged it."""

    step: int
    origin: str
    admitted: bool
    similarity: float | None
    near_copy: bool = False
    """Rejected as a near-copy of a shipped file (``selfplay.max_library_similarity``)."""
    skill: str = ""
    env: str | None = None
    """The first 12 characters of an admitted design's environment id (its code's hash)."""


def read_run(run_dir: Path) -> tuple[list[DesignVerdict], dict[int, list[float]]]:
    """The designs of a finished run (from its events) and the stored designer rewards by step."""
    db = run_dir / "run.sqlite"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        events = conn.execute(
            "SELECT step, kind, message FROM events WHERE kind IN ('admitted', 'rejected') ORDER BY id"
        ).fetchall()
        rewards = conn.execute(
            "SELECT created_step, designer_reward FROM environments "
            "WHERE origin IN ('fresh', 'mutation', 'repair') AND designer_reward IS NOT NULL"
        ).fetchall()
    finally:
        conn.close()
    designs = []
    for step, kind, message in events:
        match = DESIGN.match(message)
        if match is None:
            continue
        near = NEAREST.search(message) if kind == "admitted" else None
        designs.append(
            DesignVerdict(
                int(step),
                match["origin"],
                kind == "admitted",
                float(near["ratio"]) if near else None,
                near_copy=kind == "rejected" and "near-copy of library file" in message,
                skill=match["skill"].strip(),
                env=match["env"],
            )
        )
    by_step: dict[int, list[float]] = {}
    for step, reward in rewards:
        by_step.setdefault(int(step), []).append(float(reward))
    return designs, by_step


def thirds(steps: list[int]) -> dict[int, int]:
    """Generation step -> third (0, 1, 2), generations in order."""
    ordered = sorted(set(steps))
    return {s: i * 3 // len(ordered) for i, s in enumerate(ordered)}


def admitted_fraction(designs: list[DesignVerdict]) -> float:
    return sum(d.admitted for d in designs) / len(designs) if designs else float("nan")


def kind_rates(designs: list[DesignVerdict]) -> dict[tuple[str, str], float]:
    """Admitted fraction of each (skill, origin) over ``designs``."""
    kinds: dict[tuple[str, str], list[DesignVerdict]] = {}
    for d in designs:
        kinds.setdefault((d.skill, d.origin), []).append(d)
    return {kind: admitted_fraction(ds) for kind, ds in kinds.items()}


def within_kind(designs: list[DesignVerdict], rates: dict[tuple[str, str], float]) -> float:
    """Mean of (admitted - the admitted rate of the design's skill and origin) over ``designs``."""
    return statistics.fmean(d.admitted - rates[(d.skill, d.origin)] for d in designs) if designs else float("nan")


def bootstrap_difference(
    per_seed: list[tuple[list[DesignVerdict], list[DesignVerdict]]],
    draws: int = 10_000,
    rates: dict[tuple[str, str], float] | None = None,
) -> tuple[float, float]:
    """95% interval of mean over seeds of (last third - first third) admitted fraction; with
    ``rates``, of the within-kind residuals (:func:`within_kind`) instead."""

    def score(designs: list[DesignVerdict]) -> float:
        return admitted_fraction(designs) if rates is None else within_kind(designs, rates)

    rng = random.Random(0)
    stats = []
    for _ in range(draws):
        seeds = [per_seed[rng.randrange(len(per_seed))] for _ in per_seed]
        diffs = []
        for first, last in seeds:
            a = [first[rng.randrange(len(first))] for _ in first]
            b = [last[rng.randrange(len(last))] for _ in last]
            diffs.append(score(b) - score(a))
        stats.append(statistics.fmean(diffs))
    stats.sort()
    return stats[int(0.025 * draws)], stats[int(0.975 * draws) - 1]


def run_seed(config: str, seed: int, run_dir: Path, overrides: tuple[str, ...] = ()) -> float:
    """Run the main job for ``seed`` into ``run_dir`` (skipped when it already finished); seconds."""
    if (run_dir / "run.sqlite").is_file():
        conn = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True)
        try:
            finished = conn.execute("SELECT status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
        if finished and finished[0] == "finished":
            print(f"seed {seed}: reading the finished run in {run_dir}", flush=True)
            return 0.0
    t0 = time.perf_counter()
    cmd = [
        str(Path(sys.executable).parent / "spade-async"),
        "run",
        config,
        "--headless",
        "--set",
        f"run.seed={seed}",
        "--set",
        f'run.run_dir="{run_dir}"',
        *(arg for item in overrides for arg in ("--set", item)),
    ]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs" / "designer-learning")
    parser.add_argument("--reuse", action="append", default=[], metavar="SEED=RUN_DIR")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override for every seed's run"
    )
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    reuse = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.reuse)}
    rec = Recorder("designer_learning", str(args.json) if args.json else None, {"config": args.config, "seeds": seeds})
    per_third: list[list[DesignVerdict]] = [[], [], []]
    rewards_third: list[list[float]] = [[], [], []]
    paired: list[tuple[list[DesignVerdict], list[DesignVerdict]]] = []
    seconds = {}
    for seed in seeds:
        run_dir = reuse.get(seed) or args.runs_dir / f"seed{seed}"
        seconds[seed] = run_seed(args.config, seed, run_dir, tuple(args.set))
        designs, rewards = read_run(run_dir)
        if not designs:
            raise SystemExit(f"seed {seed}: no design events in {run_dir}")
        third_of = thirds([d.step for d in designs])
        split: list[list[DesignVerdict]] = [[], [], []]
        for d in designs:
            split[third_of[d.step]].append(d)
        for i in range(3):
            per_third[i].extend(split[i])
        for step, values in rewards.items():
            if step in third_of:
                rewards_third[third_of[step]].extend(values)
        paired.append((split[0], split[2]))
        print(
            f"seed {seed}: "
            + ", ".join(f"third {i + 1} {sum(d.admitted for d in split[i])}/{len(split[i])}" for i in range(3)),
            flush=True,
        )
    rows = [
        "| third | designs | admitted | fresh admitted | admitted, of mutations | admitted, of fresh designs "
        "| mean designer reward | median similarity (admitted) | rejected as near-copies |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    figures: dict[str, float] = {}
    for i, designs in enumerate(per_third):
        admitted = [d for d in designs if d.admitted]
        fresh = sum(1 for d in admitted if d.origin == "fresh")
        sims = [d.similarity for d in admitted if d.similarity is not None]
        reward = statistics.fmean(rewards_third[i]) if rewards_third[i] else float("nan")
        median = statistics.median(sims) if sims else float("nan")
        by_origin = {o: [d for d in designs if d.origin == o] for o in ("mutation", "fresh")}
        of = {o: f"{sum(d.admitted for d in ds)}/{len(ds)}" for o, ds in by_origin.items()}
        rows.append(
            f"| {i + 1} | {len(designs)} | {len(admitted)} ({admitted_fraction(designs):.2f}) | "
            f"{fresh} ({fresh / len(designs) if designs else float('nan'):.2f}) | {of['mutation']} | {of['fresh']} | "
            f"{reward:+.3f} | {median:.3f} | {sum(d.near_copy for d in designs)} |"
        )
        for o, ds in by_origin.items():
            figures[f"admitted_fraction_{o}_third{i + 1}"] = admitted_fraction(ds)
        figures[f"admitted_fraction_third{i + 1}"] = admitted_fraction(designs)
        figures[f"fresh_fraction_third{i + 1}"] = fresh / len(designs) if designs else float("nan")
        figures[f"median_similarity_third{i + 1}"] = median
        figures[f"near_copy_fraction_third{i + 1}"] = (
            sum(d.near_copy for d in designs) / len(designs) if designs else float("nan")
        )
    diffs = [admitted_fraction(last) - admitted_fraction(first) for first, last in paired]
    low, high = bootstrap_difference(paired)
    figures |= {"last_minus_first": statistics.fmean(diffs), "last_minus_first_low": low, "last_minus_first_high": high}
    rates = kind_rates([d for third in per_third for d in third])
    kind_diffs = [within_kind(last, rates) - within_kind(first, rates) for first, last in paired]
    kind_low, kind_high = bootstrap_difference(paired, rates=rates)
    figures |= {
        "last_minus_first_within_kind": statistics.fmean(kind_diffs),
        "last_minus_first_within_kind_low": kind_low,
        "last_minus_first_within_kind_high": kind_high,
    }
    print("\n".join(rows))
    print(
        f"last third - first third, admitted fraction: {statistics.fmean(diffs):+.3f} "
        f"[{low:+.3f}, {high:+.3f}] (per seed: {', '.join(f'{d:+.2f}' for d in diffs)})"
    )
    print(
        f"the same within skill and origin (admitted - that kind's rate over the benchmark's {len(rates)} kinds): "
        f"{statistics.fmean(kind_diffs):+.3f} [{kind_low:+.3f}, {kind_high:+.3f}] "
        f"(per seed: {', '.join(f'{d:+.2f}' for d in kind_diffs)})"
    )
    rec.add(**figures, **{f"seconds_seed{seed}": s for seed, s in seconds.items()})
    rec.write()


if __name__ == "__main__":
    main()
