"""benchmarks/designer_paired.py pairs two runs' designs right (same seed, step and place; a
place whose prompt differs is left out), counts the verdict pairs and the same environments,
and its McNemar p and paired interval say what they should. Synthetic run databases holding
only what the benchmark reads (the run's admitted / rejected events), no model."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark scripts import their siblings by name

import designer_paired as dp  # noqa: E402
from designer_learning import read_run  # noqa: E402


def a_run(folder: Path, events: list[tuple[int, str, str]]) -> Path:
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "run.sqlite") as conn:
        conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, step INTEGER, kind TEXT, message TEXT)")
        conn.execute("CREATE TABLE environments (created_step INTEGER, designer_reward REAL, origin TEXT)")
        conn.executemany("INSERT INTO events (step, kind, message) VALUES (?, ?, ?)", events)
    return folder


def admitted(step: int, env: str, skill: str, origin: str) -> tuple[int, str, str]:
    return (step, "admitted", f"env {env} {skill} ({origin}), nearest library file x.py (0.81)")


def rejected(step: int, skill: str, origin: str) -> tuple[int, str, str]:
    return (step, "rejected", f"{skill} ({origin}): reset(seed=0) failed")


def test_designs_pair_by_step_and_place_and_other_prompts_are_left_out(tmp_path: Path) -> None:
    a = a_run(
        tmp_path / "a",
        [
            admitted(0, "aaaa", "Logic", "fresh"),
            rejected(0, "Logic", "mutation"),
            rejected(2, "Planning", "fresh"),
            admitted(2, "bbbb", "Planning", "mutation"),
        ],
    )
    b = a_run(
        tmp_path / "b",
        [
            admitted(0, "aaaa", "Logic", "fresh"),  # the same environment
            admitted(0, "cccc", "Logic", "mutation"),  # only B
            rejected(2, "Optimization", "fresh"),  # another prompt: left out
            admitted(2, "dddd", "Planning", "mutation"),  # both, another environment
        ],
    )
    paired = dp.pair_designs(read_run(a)[0], read_run(b)[0])
    assert paired.mismatched == 1 and len(paired.pairs) == 3
    assert dp.counts(paired.pairs) == {"both": 2, "only_a": 0, "only_b": 1, "neither": 0, "same_environment": 1}


def test_mcnemar_and_the_paired_interval() -> None:
    assert dp.mcnemar_p(3, 3) == 1.0
    assert abs(dp.mcnemar_p(0, 6) - 2 / 64) < 1e-12 and dp.mcnemar_p(6, 0) == dp.mcnemar_p(0, 6)
    assert dp.mcnemar_p(1, 9) < 0.05 < dp.mcnemar_p(2, 6)

    def verdict(ok: bool) -> dp.DesignVerdict:
        return dp.DesignVerdict(0, "fresh", ok, None, skill="Logic")

    same = dp.Pairs([(verdict(i % 2 == 0), verdict(i % 2 == 0)) for i in range(12)], 0)
    low, high = dp.bootstrap_paired_difference([same, same, same], draws=500)
    assert low == high == 0.0  # identical verdicts: no difference at all
    better = dp.Pairs([(verdict(False), verdict(i < 9)) for i in range(12)], 0)
    low, high = dp.bootstrap_paired_difference([better, better, better], draws=500)
    assert 0.0 < low <= 0.75 <= high
