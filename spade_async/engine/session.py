"""Keep a terminal's Ctrl-C away from vLLM's processes, which are started with spawn.

Why: a terminal sends Ctrl-C (SIGINT) to its whole foreground process group. vLLM's
EngineCore and workers install their own SIGINT handlers and die on it, so the run could
not finish its step. Blocking SIGINT in the thread that starts the engine protects a
*forked* child only: a spawned child (vLLM's processes are always spawned, see
:mod:`spade_async.engine.vllm`) starts with an empty signal mask (measured: SigBlk 0 in
``/proc/PID/status`` of EngineCore and Worker).

How: a spawned child imports its parent's ``__main__`` module before it runs its target; for
``spade-async`` that imports this package, whose ``__init__`` calls :func:`detach_engine_child`.
While the engine is being created, :func:`engine_children_detached` sets a variable naming
the trainer's pid; a process that sees it and whose parent is that pid (the EngineCore, not
its workers nor anything else) moves itself into a process group of its own. Its workers
inherit that group. The run's own handler then decides what Ctrl-C means (finish the step,
checkpoint, close the engine).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

ENGINE_PARENT = "SPADE_ASYNC_ENGINE_PARENT"


def detach_engine_child() -> bool:
    """In a direct child of the trainer started while the engine was being created: leave
    the trainer's process group. Returns whether it did."""
    parent = os.environ.get(ENGINE_PARENT)
    if not parent or parent != str(os.getppid()):
        return False
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
        return True
    return False


@contextlib.contextmanager
def engine_children_detached() -> Iterator[None]:
    """Mark the processes started in this block (the engine's) to detach themselves."""
    before = os.environ.get(ENGINE_PARENT)
    os.environ[ENGINE_PARENT] = str(os.getpid())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENGINE_PARENT, None)
        else:
            os.environ[ENGINE_PARENT] = before
