"""The soak benchmark's sampler and growth fit (benchmarks/soak.py): pure functions, and the
/proc sampling of a short-lived process tree this test creates."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

SOAK_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"
_spec = importlib.util.spec_from_file_location("soak_benchmark", SOAK_PATH)
assert _spec is not None and _spec.loader is not None
soak = importlib.util.module_from_spec(_spec)
sys.modules["soak_benchmark"] = soak  # dataclasses look their module up by name
_spec.loader.exec_module(soak)

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")


def _sample(step: int, rss: float, fds: int = 10, db: float = 1.0) -> object:
    return soak.Sample(step=step, t_s=float(step), rss_mib=rss, tree_rss_mib=2 * rss, fds=fds, procs=3, db_mib=db)


def test_slope_is_least_squares() -> None:
    assert soak.slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2.0)
    # noisy points: the fitted slope, not end minus start
    assert soak.slope([0, 1, 2, 3], [0, 2, 0, 2]) == pytest.approx(0.4)
    assert soak.slope([5], [1]) == 0.0
    assert soak.slope([2, 2], [1, 9]) == 0.0


def test_growth_per_100_leaves_the_warmup_out() -> None:
    # 50 MiB jump during the warm-up (model load), then +0.1 MiB and +0.03 fd per step
    samples = [_sample(s, 500.0 + (50 if s > 5 else 0) + 0.1 * s, fds=10 + (s * 3) // 100) for s in range(0, 6)]
    samples += [_sample(s, 550.0 + 0.1 * s, fds=10 + (s * 3) // 100, db=1 + 0.06 * s) for s in range(6, 206)]
    growth = soak.growth_per_100(samples, warmup=5)
    assert growth["rss_mib"] == pytest.approx(10.0)
    assert growth["tree_rss_mib"] == pytest.approx(20.0)
    assert growth["db_mib"] == pytest.approx(6.0)
    assert growth["procs"] == pytest.approx(0.0)
    assert growth["fds"] == pytest.approx(3.0, abs=0.1)
    with_warmup = soak.growth_per_100(samples, warmup=0)
    assert with_warmup["rss_mib"] > growth["rss_mib"]
    text = soak.summary(samples, warmup=5)
    assert "steps 6..205" in text and "+10.00" in text
    assert "no slope" in soak.summary(samples[:7], warmup=5)


def test_floor_growth_ignores_transient_peaks() -> None:
    # retained: +0.2 MiB per step; every 5th reading lands inside a step's 300 MiB transient
    samples = [_sample(s, 500.0 + 0.2 * s + (300 if s % 5 == 0 else 0)) for s in range(0, 201)]
    assert soak.floor_growth_per_100(samples, warmup=0) == pytest.approx(20.0)
    assert soak.growth_per_100(samples, warmup=0)["rss_mib"] == pytest.approx(20.0, abs=5)
    flat = [_sample(s, 600.0 + (250 if s % 7 == 0 else 0)) for s in range(0, 201)]
    assert soak.floor_growth_per_100(flat, warmup=0) == pytest.approx(0.0)
    assert "floor" in soak.summary(samples, warmup=0)


def test_parent_of_reads_past_a_command_name_with_spaces_and_parens() -> None:
    assert soak.parent_of("4242 (a b) c)) S 17 4242 4242 0 -1") == 17


def test_descendants_walks_the_whole_tree_only_below_pid() -> None:
    table = {1: 0, 10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
    assert soak.descendants(10, table) == [11, 12, 13]
    assert soak.descendants(13, table) == []


def test_db_bytes_counts_the_wal_and_shm(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    db.write_bytes(b"x" * 100)
    assert soak.db_bytes(db) == 100
    Path(f"{db}-wal").write_bytes(b"x" * 30)
    Path(f"{db}-shm").write_bytes(b"x" * 7)
    assert soak.db_bytes(db) == 137
    assert soak.db_bytes(tmp_path / "absent.sqlite") == 0


TREE = """
import subprocess, sys, time
files = [open(sys.argv[1], "rb") for _ in range(25)]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
print("ready", flush=True)
sys.stdin.readline()
child.kill(); child.wait()
"""


def test_sample_reads_a_live_process_tree(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    db.write_bytes(b"y" * 2048)
    proc = subprocess.Popen(
        [sys.executable, "-c", TREE, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        got = soak.sample(proc.pid, db, step=3, t_s=1.0)
        assert got.step == 3
        assert got.procs == 1  # the sleeping grandchild
        assert got.fds >= 25 + 3
        assert 5 < got.rss_mib < got.tree_rss_mib  # the tree adds the child's resident set
        assert got.db_mib == pytest.approx(2048 / 2**20)
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=10)
    assert soak.rss_kib(proc.pid) == 0 and soak.open_fds(proc.pid) == 0  # gone: no crash, zeros


WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE steps (step INTEGER, adapter_version INTEGER, metrics TEXT)")
conn.execute("CREATE TABLE episodes (hinted INTEGER, outcome REAL)")
conn.commit()
for step in range(3):
    time.sleep(0.3)
    conn.execute("INSERT INTO steps VALUES (?, ?, ?)", (step, step + 1, '{"loss": 0.5}' if step else '{}'))
    conn.execute("INSERT INTO episodes VALUES (0, ?)", (step % 2,))
    conn.commit()
time.sleep(0.3)
"""


def test_watch_samples_each_step_a_subprocess_records(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)])
    t0 = time.perf_counter()
    samples = soak.watch(proc, db, poll_s=0.05)
    assert proc.returncode == 0 and time.perf_counter() - t0 < 20
    assert [s.step for s in samples] == [0, 1, 2, 3]
    assert all(s.rss_mib > 0 for s in samples)
    assert samples[-1].db_mib > 0
    stats = soak.learner_stats(db)
    assert stats["steps"] == 3 and stats["learner_steps"] == 2 and stats["adapter_version"] == 3
    assert stats["plain_episodes"] == 3


def test_lottery_workload_plays_the_lottery_pool_in_fixed_mode(tmp_path: Path) -> None:
    pool = soak.write_pool(tmp_path / "pool")
    files = sorted(pool.glob("*.py"))
    assert len(files) == soak.LOTTERY_COPIES and len({f.read_text() for f in files}) == soak.LOTTERY_COPIES
    values = soak.overrides("lottery", tmp_path / "run", tmp_path / "model", 200, pool)
    assert values["selfplay.mode"] == '"fixed"' and values["selfplay.fixed_pool"] == f'"{pool}"'
    assert values["run.max_steps"] == "200"
    designer = soak.overrides("designer", tmp_path / "run", tmp_path / "model", 100, None)
    assert "selfplay.fixed_pool" not in designer and "selfplay.mode" not in designer
