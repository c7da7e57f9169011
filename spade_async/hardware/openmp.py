"""One OpenMP thread team at a time: a thread hands its team back when its torch work is done.

Why: torch's CPU build parallelises each op with GNU OpenMP (libgomp), and libgomp keeps a
team of worker threads for every thread that ever ran a parallel op, for as long as that
thread lives (the main thread forever, an anyio worker thread while it idles in the pool).
Once libgomp manages more threads than the process has CPUs, it stops letting idle team
members spin between ops and puts them to sleep on a futex instead, so each op of the next
parallel region pays a wake-up. At decode sizes (16 rows, ops of ~60 us) that doubles the
time of every op: measured on 2 cores (Intel Xeon with AMX, 2 torch threads, bf16
``16x576 @ 576x1536``) 62 us when one thread runs parallel ops, 136-159 us in an anyio worker
thread after the main thread had run one (loading a model is enough). The engine loads in one
thread and decodes in another, and the learner steps in a third, so every CPU run hit this.

``omp_pause_resource_all`` (OpenMP 5.0) frees the calling thread's team; its next parallel
op starts a fresh one (tens of microseconds, once per batch or learner step). Releasing after
each unit of torch work run off the event loop, and once on the thread that loaded the model,
keeps the process at one live team: measured above, a worker thread after the main thread
released its team was back to 62 us.

Only GNU OpenMP is touched, and only the copy torch loaded; on other runtimes (a CUDA build
without it, macOS) this is a no-op.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

__all__ = ["release_openmp_team", "releasing_openmp_team"]

OMP_PAUSE_SOFT = 1
"""``omp_pause_soft`` from ``omp.h``: free the threads, keep the runtime initialised."""

P = ParamSpec("P")
R = TypeVar("R")


@functools.cache
def _libgomp() -> Any | None:
    """The GNU OpenMP runtime torch links, or None when it has none."""
    import torch

    lib_dir = Path(torch.__file__).parent / "lib"
    candidates = sorted(lib_dir.glob("libgomp*.so*"))
    if not candidates:
        return None
    try:
        gomp = ctypes.CDLL(str(candidates[0]))
        pause = gomp.omp_pause_resource_all
    except (OSError, AttributeError):
        return None
    pause.argtypes = [ctypes.c_int]
    pause.restype = ctypes.c_int
    return gomp


def release_openmp_team() -> bool:
    """Free the calling thread's OpenMP team; False where there is no libgomp (or it refused,
    e.g. inside a parallel region)."""
    gomp = _libgomp()
    return gomp is not None and gomp.omp_pause_resource_all(OMP_PAUSE_SOFT) == 0


def releasing_openmp_team(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, then :func:`release_openmp_team` on the thread that ran it (also on error)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            release_openmp_team()

    return run
