"""Deterministic crash points for crash tests: ``SPADE_ASYNC_KILL_AT=name:n`` (SIGKILL) and
``SPADE_ASYNC_RAISE_AT=name:n`` (an unexpected exception).

Why: "kill the run while it checkpoints" cannot be hit reliably with a timer from outside.
A failpoint names a moment in the code; when the environment variable names it, the
process sends itself SIGKILL the n-th time it gets there (no cleanup, no atexit, exactly
like an OOM kill or a power cut for the process). Unset, a failpoint costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

_hits: Counter[tuple[str, str]] = Counter()
_lock = threading.Lock()


class InjectedFailure(RuntimeError):
    """Raised at a failpoint named by ``SPADE_ASYNC_RAISE_AT``."""


def _due(variable: str, name: str) -> bool:
    spec = os.environ.get(variable)
    if not spec:
        return False
    target, _, count = spec.partition(":")
    if target != name:
        return False
    with _lock:
        _hits[(variable, name)] += 1
        return _hits[(variable, name)] >= int(count or 1)


def failpoint(name: str) -> None:
    """SIGKILL this process (or raise) on the n-th hit of ``name`` when the variable names it."""
    if _due("SPADE_ASYNC_KILL_AT", name):
        os.kill(os.getpid(), signal.SIGKILL)
    if _due("SPADE_ASYNC_RAISE_AT", name):
        raise InjectedFailure(f"injected failure at {name}")
