"""Host guard: the test suite leaves the host's scheduling state and files as it found them.

Why: a positive control once ran ``setpriority(PRIO_USER, getuid(), 19)`` outside the sandbox.
As root that lowered the priority of every process on the machine, PID 1 included, for good,
and no test noticed. Tests may act only on processes and files they created, so
``tests/conftest.py`` brackets every test module with :func:`snapshot` and fails the module
when :func:`compare` finds a difference.

What is watched: every process that is not the suite's own (pytest and its ancestors are
watched; pytest's descendants are not: the suite created them), apart from kernel threads
and processes younger than ``min_age_s`` (they may still be setting themselves up): nice
value, CPU affinity, scheduling policy and I/O priority. Files: the entries of ``/etc`` and
of the user's home folder and everything under ``~/.ssh`` (kind, mode, owner; size and
modification time of regular files in ``/etc`` and ``~/.ssh``). Entries that appear during
a module are not reported (another process on a shared host may create them); entries that
change or disappear are.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(platform.machine())
_IOPRIO_WHO_PROCESS = 1
_PF_KTHREAD = 0x00200000
_libc = ctypes.CDLL(None, use_errno=True)
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Snapshot:
    """What :func:`snapshot` saw: per process ``(pid, start time) -> fields``, per path ``-> fields``."""

    processes: dict[tuple[int, int], dict[str, object]] = field(default_factory=dict)
    names: dict[tuple[int, int], str] = field(default_factory=dict)
    files: dict[str, tuple[object, ...]] = field(default_factory=dict)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    name = text[text.find("(") + 1 : text.rfind(")")]
    return [name, *text.rsplit(")", 1)[1].split()]  # index i is field i + 2 of proc(5)


def _family(root: int) -> tuple[set[int], set[int]]:
    """(descendants, ancestors) of ``root``: pids whose chain of parents reaches it, and its chain."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[2])
    ancestors, cur = {root}, root
    while cur in parents and parents[cur] > 0 and len(ancestors) < 4096:
        cur = parents[cur]
        ancestors.add(cur)
    out: set[int] = set()
    for pid in parents:
        chain, cur = [], pid
        while cur in parents and cur not in out and cur != root and len(chain) < 4096:
            chain.append(cur)
            cur = parents[cur]
        if cur == root or cur in out:
            out.update(chain)
    out.discard(root)
    return out, ancestors


def _ioprio(pid: int) -> int | None:
    if _IOPRIO_GET is None:
        return None
    value = _libc.syscall(_IOPRIO_GET, _IOPRIO_WHO_PROCESS, pid)
    return None if value < 0 else int(value)


def process_state(pid: int) -> dict[str, object] | None:
    """Nice, affinity, scheduling policy and I/O priority of ``pid`` (None when it is gone)."""
    try:
        return {
            "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "affinity": sorted(os.sched_getaffinity(pid)),
            "policy": os.sched_getscheduler(pid),
            "ioprio": _ioprio(pid),
        }
    except OSError:
        return None


def _file_fields(path: Path, deep: bool) -> tuple[object, ...] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    base: tuple[object, ...] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if deep and stat.S_ISREG(st.st_mode):
        return (*base, st.st_ino, st.st_size, st.st_mtime_ns)
    return base


def default_paths() -> list[tuple[Path, bool, bool]]:
    """``(folder, recursive, compare contents metadata)`` for the host paths watched by default."""
    home = Path.home()
    return [(Path("/etc"), False, True), (home, False, False), (home / ".ssh", True, True)]


def snapshot(
    *, include: Iterable[int] = (), paths: Iterable[tuple[Path, bool, bool]] | None = None, min_age_s: float = 2.0
) -> Snapshot:
    """The watched state now (see the module docstring); ``include`` adds pids regardless of age or ancestry."""
    snap = Snapshot()
    skip, ancestors = _family(os.getpid())
    forced = set(include) | ancestors  # the test run itself and what started it, whatever their age
    with open("/proc/uptime") as handle:
        now_ticks = float(handle.read().split()[0]) * _TICKS
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        fields = _stat_fields(pid)
        if fields is None:
            continue
        start, flags, ppid = int(fields[20]), int(fields[7]), int(fields[2])
        if pid not in forced:
            if pid in skip or flags & _PF_KTHREAD or pid == 2 or ppid == 2:
                continue
            if now_ticks - start < min_age_s * _TICKS:
                continue
        state = process_state(pid)
        if state is not None:
            snap.processes[(pid, start)] = state
            snap.names[(pid, start)] = fields[0]
    for folder, recursive, deep in default_paths() if paths is None else paths:
        if not folder.is_dir():
            continue
        walker = folder.rglob("*") if recursive else folder.iterdir()
        try:
            for path in walker:
                fields_ = _file_fields(path, deep)
                if fields_ is not None:
                    snap.files[str(path)] = fields_
        except OSError:
            continue
    return snap


def compare(before: Snapshot, after: Snapshot) -> list[str]:
    """What changed from ``before`` to ``after``, one line each (processes that exited are not changes)."""
    changes: list[str] = []
    for key, old in before.processes.items():
        new = after.processes.get(key)
        if new is None:
            continue
        for name, value in old.items():
            if new.get(name) != value:
                changes.append(f"pid {key[0]} ({before.names.get(key, '?')}): {name} {value} -> {new.get(name)}")
    for path, old_fields in before.files.items():
        new_fields = after.files.get(path)
        if new_fields is None:
            if not os.path.lexists(path):
                changes.append(f"{path}: deleted")
        elif new_fields != old_fields:
            changes.append(f"{path}: {old_fields} -> {new_fields}")
    return changes
