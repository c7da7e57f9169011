"""The CPU's cores, shared between the torch stages that are running right now.

Why: on a CPU the engine (decoding) and the learner (a GRPO step) run torch ops from two
worker threads, and in async mode they overlap for part of each step and not for the rest.
A fixed split (half the cores each, what this replaced) leaves half the machine idle
whenever one stage waits for the other: the designer's generation, the agent's plays while
no batch is being trained. A full team each oversubscribes the cores while both run (four
threads on two cores made a decode step ~10x slower, 0.11 s alone against 1.5 s). So each
stage takes ``cores // running stages`` threads, and re-reads that figure at its own
boundaries: the engine before every decode step, the learner before every micro-batch. A
stage that starts while another runs costs the other at most one step at the old count.

A stage also hands its OpenMP team back when it ends (:mod:`spade_async.hardware.openmp`):
a team left behind by one stage makes every op of the other wait on a futex.

Off (``configure(None)``, the default) the share never changes a thread count: tests,
benchmarks and GPU runs keep whatever ``torch.set_num_threads`` they chose; the run turns it
on for CPU runs (:func:`spade_async.run.assemble.share_cpu_threads`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from spade_async.hardware.openmp import release_openmp_team

__all__ = ["CPU_SHARE", "CpuShare", "available_cores", "threads_for"]

P = ParamSpec("P")
R = TypeVar("R")


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_for(cores: int, running: int) -> int:
    """Threads for each of ``running`` stages on ``cores`` cores: an equal share, at least one."""
    return max(1, cores // max(1, running))


class CpuShare:
    """Counts the torch stages running off the event loop and sizes their thread teams."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores
        """Cores to share; None leaves every thread count alone."""
        self._running = 0
        self._lock = threading.Lock()

    def configure(self, cores: int | None) -> None:
        self.cores = cores

    @property
    def running(self) -> int:
        return self._running

    def threads(self) -> int | None:
        """This stage's share now, or None when the share is off."""
        return None if self.cores is None else threads_for(self.cores, self._running)

    def fit_threads(self) -> None:
        """Set the calling thread's torch thread count to its share (a stage calls this at
        its own boundaries; a no-op when off or already right)."""
        want = self.threads()
        if want is None:
            return
        import torch

        if torch.get_num_threads() != want:
            torch.set_num_threads(want)

    @contextlib.contextmanager
    def stage(self) -> Iterator[None]:
        """Count the calling thread as a running stage for the block, sized on entry; on exit
        it stops counting and hands its OpenMP team back."""
        with self._lock:
            self._running += 1
        try:
            self.fit_threads()
            yield
        finally:
            with self._lock:
                self._running -= 1
            release_openmp_team()

    def staged(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``fn`` run as a stage (for ``anyio.to_thread.run_sync``)."""

        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with self.stage():
                return fn(*args, **kwargs)

        return run


CPU_SHARE = CpuShare()
"""The process's one share: the cores are the process's, not a component's."""
