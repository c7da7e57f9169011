"""Two settings of the main job compared design by design: does a setting change what the designer writes?

Why paired: a run draws its design prompts from its seed alone (the curriculum's design stream)
and samples each design request from a seed of its own, so two runs of one seed that differ in
a setting ask the designer the same prompts in the same order. A design of one run and the
design at the same place of the other (same seed, same step, same position in the step) differ
only by what the setting did to the weights that wrote them. Counting the pairs whose verdicts
differ (McNemar) tells far more from 48 designs than comparing two admitted fractions whose
prompts were drawn apart, and a frozen designer as setting A answers "does the designer get
better from its reward" design by design.

Reads two folders of ``benchmarks/designer_learning.py`` runs (``DIR/seed{N}``, or ``--reuse``
as there) and prints, over every seed: the pairs, those whose prompts match (same skill and
origin; the rest are reported and left out), both admitted, only A, only B, neither, how many
admitted pairs are the same environment (same code), the exact two-sided McNemar p on the
discordant pairs, and B minus A's admitted fraction with a 95% interval from a bootstrap over
seeds and, inside each seed, the pairs (10,000 draws).

Usage: ``python benchmarks/designer_paired.py A_DIR B_DIR [--seeds 0,1,2] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from designer_learning import DesignVerdict, read_run  # benchmarks/ is on sys.path: the scripts run as files
from results import Recorder
from scipy.stats import binomtest


@dataclass(frozen=True)
class Pairs:
    """The paired designs of one seed (A's and B's design at the same place) and the misfits."""

    pairs: list[tuple[DesignVerdict, DesignVerdict]]
    mismatched: int
    """Places whose prompts differ (another skill or origin): left out of every count."""


def _by_step(designs: list[DesignVerdict]) -> dict[int, list[DesignVerdict]]:
    out: dict[int, list[DesignVerdict]] = {}
    for d in designs:
        out.setdefault(d.step, []).append(d)
    return out


def pair_designs(a: list[DesignVerdict], b: list[DesignVerdict]) -> Pairs:
    """Pair the designs of two runs of one seed by (step, position within the step)."""
    by_step_a, by_step_b = _by_step(a), _by_step(b)
    pairs: list[tuple[DesignVerdict, DesignVerdict]] = []
    mismatched = 0
    for step in sorted(set(by_step_a) | set(by_step_b)):
        left, right = by_step_a.get(step, []), by_step_b.get(step, [])
        mismatched += abs(len(left) - len(right))
        for x, y in zip(left, right, strict=False):
            if (x.skill, x.origin) == (y.skill, y.origin):
                pairs.append((x, y))
            else:
                mismatched += 1
    return Pairs(pairs, mismatched)


def mcnemar_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p-value: the discordant pairs as a fair coin's tosses (scipy's
    binomial test).

    >>> mcnemar_p(0, 0)
    1.0
    >>> round(mcnemar_p(0, 6), 4)
    0.0312
    """
    n = only_a + only_b
    return float(binomtest(only_b, n, 0.5).pvalue) if n else 1.0


def bootstrap_paired_difference(per_seed: list[Pairs], draws: int = 10_000) -> tuple[float, float]:
    """95% interval of B's admitted fraction minus A's (mean over seeds), resampling seeds and,
    inside each seed, its pairs."""
    rng = random.Random(0)
    usable = [p.pairs for p in per_seed if p.pairs]
    stats = []
    for _ in range(draws):
        diffs = []
        for _seed in usable:
            pairs = usable[rng.randrange(len(usable))]
            drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
            diffs.append(statistics.fmean(y.admitted - x.admitted for x, y in drawn))
        stats.append(statistics.fmean(diffs))
    stats.sort()
    return stats[int(0.025 * draws)], stats[int(0.975 * draws) - 1]


def counts(pairs: list[tuple[DesignVerdict, DesignVerdict]]) -> dict[str, int]:
    """Both admitted, only A, only B, neither, and admitted pairs that are the same environment."""
    return {
        "both": sum(x.admitted and y.admitted for x, y in pairs),
        "only_a": sum(x.admitted and not y.admitted for x, y in pairs),
        "only_b": sum(y.admitted and not x.admitted for x, y in pairs),
        "neither": sum(not x.admitted and not y.admitted for x, y in pairs),
        "same_environment": sum(x.admitted and y.admitted and x.env is not None and x.env == y.env for x, y in pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="runs of setting A (DIR/seed{N})")
    parser.add_argument("b", type=Path, help="runs of setting B (DIR/seed{N})")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--reuse-a", action="append", default=[], metavar="SEED=RUN_DIR")
    parser.add_argument("--reuse-b", action="append", default=[], metavar="SEED=RUN_DIR")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    reuse_a = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.reuse_a)}
    reuse_b = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.reuse_b)}
    rec = Recorder(
        "designer_paired", str(args.json) if args.json else None, {"a": str(args.a), "b": str(args.b), "seeds": seeds}
    )
    per_seed: list[Pairs] = []
    for seed in seeds:
        run_a = reuse_a.get(seed) or args.a / f"seed{seed}"
        run_b = reuse_b.get(seed) or args.b / f"seed{seed}"
        paired = pair_designs(read_run(run_a)[0], read_run(run_b)[0])
        per_seed.append(paired)
        c = counts(paired.pairs)
        print(
            f"seed {seed}: {len(paired.pairs)} pairs ({paired.mismatched} places with other prompts left out): "
            f"both {c['both']} (same environment {c['same_environment']}), only A {c['only_a']}, "
            f"only B {c['only_b']}, neither {c['neither']}",
            flush=True,
        )
    every = [pair for p in per_seed for pair in p.pairs]
    c = counts(every)
    diffs = [statistics.fmean(y.admitted - x.admitted for x, y in p.pairs) for p in per_seed if p.pairs]
    low, high = bootstrap_paired_difference(per_seed)
    p_value = mcnemar_p(c["only_a"], c["only_b"])
    print(
        f"all seeds: {len(every)} pairs, both {c['both']} (same environment {c['same_environment']}), "
        f"only A {c['only_a']}, only B {c['only_b']}, neither {c['neither']}; McNemar p = {p_value:.3f}"
    )
    print(
        f"B - A admitted fraction: {statistics.fmean(diffs):+.3f} [{low:+.3f}, {high:+.3f}] "
        f"(per seed: {', '.join(f'{d:+.2f}' for d in diffs)})"
    )
    rec.add(
        pairs=len(every),
        mismatched=sum(p.mismatched for p in per_seed),
        **{k: float(v) for k, v in c.items()},
        mcnemar_p=p_value,
        b_minus_a=statistics.fmean(diffs),
        b_minus_a_low=low,
        b_minus_a_high=high,
    )
    rec.write()


if __name__ == "__main__":
    main()
