"""The sandbox's memory budget against the host's memory, checked when a pool starts.

Why: each env child may map up to ``sandbox.memory_mib`` (``RLIMIT_AS``) and up to
``sandbox.max_children`` run at once. When that product exceeds the memory the host can give,
a few memory-hungry envs can drive the host out of memory. Children are the OOM killer's first
choice (``oom_score_adj`` 1000, set in ``harden``), so the kernel should kill them, not the
trainer, but a budget that the host cannot hold is still a configuration error worth saying
at start, with the two settings that fix it. The limit is the smaller of ``MemAvailable`` and
the cgroup's ``memory.max`` (a container's own limit), when either can be read.
"""

from __future__ import annotations

from pathlib import Path

MIB = 1 << 20


def host_memory_bytes(meminfo: str = "/proc/meminfo", cgroup: str = "/sys/fs/cgroup/memory.max") -> int | None:
    """Memory available to this process tree now (bytes), or None when it cannot be read."""
    found: list[int] = []
    try:
        for row in Path(meminfo).read_text().splitlines():
            if row.startswith("MemAvailable:"):
                found.append(int(row.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path(cgroup).read_text().strip()
        if limit.isdigit():
            found.append(int(limit))
    except OSError:
        pass
    return min(found) if found else None


def budget_warning(max_children: int, memory_mib: int, available: int | None) -> str | None:
    """A warning when ``max_children`` x ``memory_mib`` exceeds ``available`` bytes (None: fits or unknown)."""
    budget = max_children * memory_mib * MIB
    if available is None or budget <= available:
        return None
    return (
        f"sandbox memory budget: up to {max_children} env children x {memory_mib} MiB address space = "
        f"{budget / (1 << 30):.1f} GiB, more than the {available / (1 << 30):.1f} GiB this host has available. "
        "Under memory pressure the kernel kills env children first (oom_score_adj 1000), but lower "
        "sandbox.max_children or sandbox.memory_mib so that they fit."
    )
