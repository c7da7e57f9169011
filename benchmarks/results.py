"""A benchmark's headline figures as plain JSON, with the machine and moment they came from.

Why: the README's measured table used to be typed in by hand and went stale (it quoted a
spawn time and an async fraction two releases old). Now each benchmark that feeds the table
writes its figures with ``--json PATH`` (``make bench`` does), beside what makes a figure on a
shared CPU mean anything: the date, the CPU model and the flags that set its speed, the
cores, the load average when the benchmark started and when it ended, and the commit it
measured. ``benchmarks/readme_table.py`` turns these files into ``docs/measured.md`` and the
README's table; nothing here imports torch, so the generator and its test stay light.

The file format (``version`` 1): ``{"version", "benchmark", "args", "figures", "machine"}``
with ``figures`` a flat ``name -> number`` map and ``machine`` as ``machine_snapshot`` returns
(a benchmark may add ``detail``, anything JSON, which the table does not read).

Where the files go: one folder per CPU kind, ``benchmarks/results/<kind>/NAME.json``, so
results from two kinds of machine live side by side and the table has rows for each. The
kind is the CPU model and the best of the flags that set its matmul speed (``cpu_kind``:
``AMD EPYC, avx512_bf16, no AMX``; ``Intel Xeon ..., amx_bf16``), the folder its slug
(``kind_slug``: ``amd-epyc-avx512-bf16-no-amx``); ``python benchmarks/results.py kind``
prints this machine's (``make bench`` writes there). The table reads a file's kind from its
own ``machine`` entry, never from the folder; files directly in ``benchmarks/results/``
(written before the per-kind folders) are read the same way.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spade_async.hardware.cpu import cpu_flags

VERSION = 1
FLAGS_THAT_MATTER = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
"""The CPU flags that move these figures: the SIMD width and the bf16 dot-product instructions."""

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("docs/measured.md", "README.md", "benchmarks/results/")
"""What ``make bench`` itself rewrites: changes there do not make the measured commit dirty."""


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def load_average() -> float:
    """The 1-minute load average (``nan`` where ``/proc/loadavg`` is unreadable)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_brief(flags: frozenset[str] | None = None) -> str:
    """The CPU model and the flags that set its matmul speed on one line, e.g.
    ``AMD EPYC (avx512f yes, avx512_bf16 yes, amx_bf16 no)``."""
    have = cpu_flags() if flags is None else flags
    named = ", ".join(f"{flag} {'yes' if flag in have else 'no'}" for flag in FLAGS_THAT_MATTER[1:])
    return f"{cpu_model()} ({named})"


def cpu_kind(machine: Mapping[str, Any]) -> str:
    """The CPU kind a result was measured on, from its ``machine`` entry: the model, then the
    best bf16/SIMD level its flags give (``AMD EPYC, avx512_bf16, no AMX``)."""
    have = machine.get("flags", {})
    if have.get("amx_bf16"):
        level = "amx_bf16"
    elif have.get("avx512_bf16"):
        level = "avx512_bf16, no AMX"
    elif have.get("avx512f"):
        level = "avx512f, no bf16"
    elif have.get("avx2"):
        level = "avx2, no AVX-512"
    else:
        level = "no AVX2"
    return f"{machine.get('cpu', 'unknown CPU')}, {level}"


def kind_slug(kind: str) -> str:
    """A kind as a folder name: lower case, runs of anything else than letters and digits as ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-") or "unknown-cpu"


def this_kind() -> str:
    """This machine's CPU kind (``cpu_kind`` of its model and flags)."""
    flags = cpu_flags()
    return cpu_kind({"cpu": cpu_model(), "flags": {flag: flag in flags for flag in FLAGS_THAT_MATTER}})


def commit() -> str:
    """The short commit measured, ``+changes`` when tracked files other than the generated
    ones differ from it (``unknown`` outside a git checkout)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = [row[3:] for row in changed if not row[3:].startswith(GENERATED)]
    return f"{head}+changes" if dirty else head


def machine_snapshot() -> dict[str, Any]:
    """Where and when: UTC time, CPU model, the flags that matter, cores, load average, commit."""
    flags = cpu_flags()
    return {
        "date": now(),
        "cpu": cpu_model(),
        "flags": {flag: flag in flags for flag in FLAGS_THAT_MATTER},
        "cores": len(os.sched_getaffinity(0)),
        "load_start": load_average(),
        "commit": commit(),
    }


class Recorder:
    """Started when the benchmark starts (load average, date), written when it ends (with the
    load average and date then: ``load_end``, ``date_end``)."""

    def __init__(self, benchmark: str, path: str | None, args: dict[str, Any]) -> None:
        self.benchmark, self.path, self.args = benchmark, path, args
        self.machine = machine_snapshot()
        self.figures: dict[str, float] = {}
        self.detail: dict[str, Any] | None = None

    def add(self, **figures: float) -> None:
        """Headline figures (numbers; the table's rows read them by name)."""
        self.figures.update({name: float(value) for name, value in figures.items()})

    def write(self) -> None:
        """Write the file (nothing without ``--json``), the end load average added."""
        if self.path is None:
            return
        doc = {
            "version": VERSION,
            "benchmark": self.benchmark,
            "args": self.args,
            "figures": self.figures,
            "machine": {**self.machine, "load_end": load_average(), "date_end": now()},
        }
        if self.detail is not None:
            doc["detail"] = self.detail
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        Path(self.path).write_text(json.dumps(doc, indent=2, default=str) + "\n")


def main(argv: list[str]) -> None:
    """``python benchmarks/results.py kind``: this machine's kind as a folder name (``make bench``)."""
    if argv != ["kind"]:
        raise SystemExit("usage: python benchmarks/results.py kind")
    print(kind_slug(this_kind()))


if __name__ == "__main__":
    main(sys.argv[1:])
