"""Deterministic crash points for kill -9 tests: ``SPADE_ASYNC_KILL_AT=name:n``.

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

_hits: Counter[str] = Counter()
_lock = threading.Lock()


def failpoint(name: str) -> None:
    """SIGKILL this process on the n-th hit of ``name`` if ``SPADE_ASYNC_KILL_AT=name:n``."""
    spec = os.environ.get("SPADE_ASYNC_KILL_AT")
    if not spec:
        return
    target, _, count = spec.partition(":")
    if target != name:
        return
    with _lock:
        _hits[name] += 1
        hit = _hits[name]
    if hit >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
