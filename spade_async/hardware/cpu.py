"""What this CPU computes fast: the instruction-set flags that pick bfloat16 at start-up.

Why read flags: on a CPU with bf16 dot-product instructions (AVX-512 BF16, AMX-BF16) a bf16
matmul runs ~4x the float32 rate (measured on a 2-core AMD EPYC with ``avx512_bf16``: 727 vs
176 GFLOP/s), while on one without them bf16 is emulated and slower than float32. So
``model.dtype = "auto"`` asks the CPU, never assumes: the flags come from ``/proc/cpuinfo``
(Linux; elsewhere none are known and ``auto`` stays float32).
"""

from __future__ import annotations

import functools
from pathlib import Path

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""CPU flags (as ``/proc/cpuinfo`` spells them) whose presence makes bf16 the CPU's fast dtype."""

CPUINFO = Path("/proc/cpuinfo")


def parse_cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags every processor listed in a ``/proc/cpuinfo`` text has (the first ``flags`` line
    of each processor; an empty set when there is none)."""
    per_cpu = [
        frozenset(line.split(":", 1)[1].split())
        for line in cpuinfo.splitlines()
        if line.split(":", 1)[0].strip() == "flags" and ":" in line
    ]
    return frozenset.intersection(*per_cpu) if per_cpu else frozenset()


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This machine's CPU flags (read once per process)."""
    try:
        return parse_cpu_flags(CPUINFO.read_text(errors="replace"))
    except OSError:
        return frozenset()


def bf16_flags(flags: frozenset[str] | None = None) -> tuple[str, ...]:
    """Which of ``BF16_FLAGS`` the CPU has (``flags`` defaults to this machine's)."""
    have = cpu_flags() if flags is None else flags
    return tuple(flag for flag in BF16_FLAGS if flag in have)
