"""Leaks over a long run, measured from outside: RSS, open fds, child processes, database size.

Why from outside: a leak the trainer measured on itself would be bent by the measuring (an
in-process sampler holds references, opens files); here the real CLI runs as a subprocess
(``spade-async run configs/tiny.toml --headless`` on the tiny random model) and this script
only reads ``/proc`` and the run database, read-only. After every finished step it records:

* ``rss_mib``: resident set of the trainer process itself (``VmRSS``);
* ``tree_rss_mib``: the sum over the trainer and all its descendants (sandbox workers and
  their children; shared pages are counted once per process, so this over-counts, but its
  growth is what a leaking pool of children would show);
* ``fds``: open file descriptors of the trainer (``/proc/PID/fd``);
* ``procs``: live descendant processes of the trainer;
* ``db_mib``: the run's SQLite files together (``run.sqlite`` + ``-wal`` + ``-shm``).

The growth per 100 steps is the least-squares slope of each series over the steps after a
warm-up (model load, first adapter, caches filling), times 100.

Two workloads: ``designer`` is the tiny random model with its designer (``configs/tiny.toml``:
nothing it writes is admitted and the seed games are never won, so no adapter is published);
``lottery`` plays ``spade_async.testing.LOTTERY_ENV`` as a fixed pool (two copies), whose
outcome the seed draws, so every group has GRPO signal: the learner steps and publishes an
adapter version each step (the summary prints how many learner steps happened).

    python benchmarks/soak.py --workload lottery --steps 200 [--warmup 20] [--json out.json]

Measured figures: docs/soak.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
SERIES = ("rss_mib", "tree_rss_mib", "fds", "procs", "db_mib")


@dataclass(frozen=True)
class Sample:
    """What the trainer held when ``step`` steps had finished (``t_s`` after its start)."""

    step: int
    t_s: float
    rss_mib: float
    tree_rss_mib: float
    fds: int
    procs: int
    db_mib: float


# ---- /proc readers (Linux) ----


def rss_kib(pid: int, proc: Path = Path("/proc")) -> int:
    """Resident set of ``pid`` in KiB (``VmRSS``; 0 for a zombie or a process already gone)."""
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def open_fds(pid: int, proc: Path = Path("/proc")) -> int:
    """Open file descriptors of ``pid`` (0 when gone)."""
    try:
        return len(os.listdir(proc / str(pid) / "fd"))
    except OSError:
        return 0


def parent_of(stat: str) -> int:
    """The parent pid in a ``/proc/PID/stat`` line (the command name may hold spaces and ')')."""
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def parents(proc: Path = Path("/proc")) -> dict[int, int]:
    """pid -> parent pid of every process visible in ``proc``."""
    table: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            table[int(entry.name)] = parent_of((entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue  # exited between the listing and the read
    return table


def descendants(pid: int, table: dict[int, int]) -> list[int]:
    """Every process below ``pid`` in ``table`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for child, parent in table.items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, ()))
    return sorted(found)


def db_bytes(db: Path) -> int:
    """Bytes of a SQLite database with its ``-wal`` and ``-shm`` files (the absent ones count 0)."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.stat(f"{db}{suffix}").st_size
        except OSError:
            pass
    return total


def sample(pid: int, db: Path, step: int, t_s: float, proc: Path = Path("/proc")) -> Sample:
    """One reading of the process ``pid`` and its tree, and of the database ``db``."""
    below = descendants(pid, parents(proc))
    return Sample(
        step=step,
        t_s=round(t_s, 2),
        rss_mib=rss_kib(pid, proc) / 1024,
        tree_rss_mib=sum(rss_kib(p, proc) for p in [pid, *below]) / 1024,
        fds=open_fds(pid, proc),
        procs=len(below),
        db_mib=db_bytes(db) / MIB,
    )


# ---- growth ----


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (0 with fewer than two distinct xs)."""
    n = len(xs)
    if n < 2 or n != len(ys):
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def growth_per_100(samples: Sequence[Sample], warmup: int) -> dict[str, float]:
    """Slope of each series per 100 steps, fitted on the samples after step ``warmup``."""
    kept = [s for s in samples if s.step > warmup]
    steps = [float(s.step) for s in kept]
    return {name: 100 * slope(steps, [float(getattr(s, name)) for s in kept]) for name in SERIES}


def floor_growth_per_100(samples: Sequence[Sample], warmup: int, name: str = "rss_mib", window: int = 20) -> float:
    """Slope per 100 steps of the lowest reading of ``name`` in each ``window``-step window after
    ``warmup``: what is retained, with a step's transient allocations (a reading landing inside a
    learner step) left out. Only complete windows count."""
    kept = [s for s in samples if s.step > warmup]
    if not kept:
        return 0.0
    starts = range(kept[0].step, kept[-1].step - window + 2, window)
    floors = [min(float(getattr(s, name)) for s in kept if a <= s.step < a + window) for a in starts]
    return 100 * slope([float(a) for a in starts], floors)


def summary(samples: Sequence[Sample], warmup: int) -> str:
    """Start (first sample after the warm-up), end and growth per 100 steps of each series."""
    kept = [s for s in samples if s.step > warmup]
    if len(kept) < 2:
        return f"only {len(kept)} samples after the warm-up of {warmup} steps: no slope"
    growth = growth_per_100(samples, warmup)
    lines = [f"{'series':<14}{'start':>10}{'end':>10}{'per 100 steps':>16}   (steps {kept[0].step}..{kept[-1].step})"]
    for name in SERIES:
        first, last = getattr(kept[0], name), getattr(kept[-1], name)
        lines.append(f"{name:<14}{first:>10.1f}{last:>10.1f}{growth[name]:>+16.2f}")
    lines.append(f"rss_mib floor of 20-step windows, per 100 steps: {floor_growth_per_100(samples, warmup):+.2f}")
    return "\n".join(lines)


# ---- the run ----


def finished_steps(db: Path) -> int:
    """Steps the run has recorded (0 before the database or its first step exists); read-only."""
    if not db.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT count(*) FROM steps").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0  # not migrated yet, or a lock held past the timeout: read again next poll


def learner_stats(db: Path) -> dict[str, float]:
    """Learner steps (steps with a loss), the final adapter version and the episodes' mean outcome."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute("SELECT adapter_version, metrics FROM steps ORDER BY step").fetchall()
        losses = [json.loads(m).get("loss") for _, m in rows]
        wins = conn.execute("SELECT avg(outcome), count(*) FROM episodes WHERE hinted = 0").fetchone()
    finally:
        conn.close()
    return {
        "steps": len(rows),
        "learner_steps": sum(1 for loss in losses if loss is not None),
        "adapter_version": rows[-1][0] if rows else 0,
        "plain_return_mean": wins[0] if wins[0] is not None else float("nan"),
        "plain_episodes": wins[1],
    }


LOTTERY_COPIES = 2


def overrides(workload: str, run_dir: Path, model: Path, steps: int, pool: Path | None) -> dict[str, str]:
    """``--set`` values of a workload: the tiny random model, short generations, rare checkpoints."""
    values = {
        "model.name": f'"{model}"',
        "run.run_dir": f'"{run_dir}"',
        "run.max_steps": str(steps),
        "run.checkpoint_every": "25",
        "selfplay.max_turns": "2",
        "selfplay.repair_turns": "0",
        "selfplay.separate_hint_call": "false",
        "engine.designer.max_new_tokens": "64",
        "engine.hint.max_new_tokens": "8",
        "engine.agent.max_new_tokens": "4",
        "corpus.max_chars": "200",
        "memory.embed_model": '"hashing"',
    }
    if workload == "lottery":
        assert pool is not None
        values |= {
            "selfplay.mode": '"fixed"',
            "selfplay.fixed_pool": f'"{pool}"',
            "selfplay.envs_per_step": str(LOTTERY_COPIES),
            "selfplay.plays": "8",
            "selfplay.hinted_plays": "0",
        }
    return values


def write_pool(folder: Path) -> Path:
    """A fixed pool of LOTTERY_ENV copies (distinct code, so distinct environments)."""
    from spade_async.testing import LOTTERY_ENV

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(LOTTERY_COPIES):
        (folder / f"lottery{i}.py").write_text(f"# copy {i}\n{LOTTERY_ENV}")
    return folder


def watch(proc: subprocess.Popen[bytes], db: Path, poll_s: float = 0.5) -> list[Sample]:
    """Sample ``proc`` after every step it finishes, until it exits; step 0 is the first reading."""
    t0 = time.perf_counter()
    samples: list[Sample] = []
    seen = -1
    while proc.poll() is None:
        done = finished_steps(db)
        if done != seen:
            seen = done
            samples.append(sample(proc.pid, db, done, time.perf_counter() - t0))
        time.sleep(poll_s)
    return samples


def run(workload: str, steps: int, root: Path, log: Path) -> tuple[list[Sample], dict[str, float], float]:
    from spade_async.testing.tiny import build_tiny_model

    run_dir = root / workload
    pool = write_pool(root / "pool") if workload == "lottery" else None
    values = overrides(workload, run_dir, build_tiny_model(), steps, pool)
    cmd = [sys.executable, "-m", "spade_async.cli", "run", str(ROOT / "configs" / "tiny.toml"), "--headless"]
    cmd += [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]
    print(" ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        samples = watch(proc, run_dir / "run.sqlite")
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the run exited with {proc.returncode}; its log: {log}")
    # The producer runs a step ahead, so the readings of the last three steps can land in the
    # shutdown (sandbox workers reaped, final checkpoint): they are left out.
    return [s for s in samples if s.step < steps - 2], learner_stats(run_dir / "run.sqlite"), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=["designer", "lottery"], default="lottery")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20, help="steps left out of the slope fit")
    ap.add_argument("--json", type=Path, help="write the samples and the summary here")
    ap.add_argument("--keep", type=Path, help="run in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        samples, stats, wall = run(args.workload, args.steps, root, root / f"{args.workload}.log")
    print(
        f"{args.workload}: {stats['steps']} steps in {wall:.0f} s; learner steps {stats['learner_steps']}, "
        f"final adapter version {stats['adapter_version']}, plain return {stats['plain_return_mean']:.3f} "
        f"over {stats['plain_episodes']} episodes"
    )
    print(summary(samples, args.warmup))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "workload": args.workload,
                    "wall_s": wall,
                    "warmup": args.warmup,
                    "stats": stats,
                    "growth_per_100": growth_per_100(samples, args.warmup),
                    "samples": [asdict(s) for s in samples],
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
