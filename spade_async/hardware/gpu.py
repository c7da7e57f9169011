"""Process-level GPU plumbing: a CUDA probe that never poisons a fork, the engine's
``CUDA_VISIBLE_DEVICES``, and keeping the engine's processes out of the terminal's Ctrl-C.

Why each exists:

- vLLM starts its EngineCore by ``fork`` unless CUDA is already initialised in the parent.
  ``torch.cuda.is_available()`` initialises the CUDA driver unless
  ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` is set when it is *called* (torch reads it on every
  call), and a child forked after that fails with "Cannot re-initialize CUDA in forked
  subprocess". :func:`cuda_device_count` counts GPUs through NVML only; the package sets
  the variable on import so that library code (transformers, peft) asking the same question
  stays fork-safe too.
- The engine's GPUs are chosen by ``CUDA_VISIBLE_DEVICES`` in the environment its processes
  inherit, so :func:`scoped_visible_devices` sets it while the engine is created and puts
  the parent's value back before the learner touches CUDA.
- vLLM's EngineCore installs its own SIGINT handler, and a terminal Ctrl-C goes to the whole
  foreground process group: the engine would die before the run could finish its step and
  checkpoint. A child inherits the signal mask of the thread that creates it, so
  :func:`sigint_shielded` blocks SIGINT in the creating thread; the engine's processes never
  see it, and the run's own handler (in the main thread) decides what Ctrl-C means.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def make_cuda_probes_fork_safe() -> None:
    """Make ``torch.cuda.is_available()`` answer through NVML (no CUDA initialisation)."""
    os.environ[NVML_CHECK] = "1"


def cuda_device_count() -> int:
    """Number of GPUs this process may use, found without initialising CUDA in it.

    NVML counts them (honouring ``CUDA_VISIBLE_DEVICES``); where NVML cannot answer, a
    short-lived subprocess asks the CUDA runtime instead, so this process stays fork-safe.
    """
    make_cuda_probes_fork_safe()
    import torch

    if not torch.backends.cuda.is_built():  # a CPU-only torch
        return 0
    if torch.cuda.is_initialized():  # already initialised by someone else: nothing left to protect
        return int(torch.cuda.device_count())
    # Not torch.cuda.device_count(): when NVML fails it falls back to the CUDA runtime.
    if torch.version.hip:
        count = int(torch.cuda._device_count_amdsmi())
    else:
        count = int(torch.cuda._device_count_nvml())
    return count if count >= 0 else _count_in_subprocess()


def _count_in_subprocess() -> int:
    code = "import torch; print(torch.cuda.device_count())"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
        return int(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return 0


def visible_devices_value(gpus: Sequence[int], parent: str | None) -> str:
    """``CUDA_VISIBLE_DEVICES`` for the engine: ``gpus`` are numbers as this process sees
    them, so they index into the parent's own ``CUDA_VISIBLE_DEVICES`` when it has one."""
    if parent is None or not parent.strip():
        return ",".join(str(g) for g in gpus)
    names = [n.strip() for n in parent.split(",") if n.strip()]
    return ",".join(names[g] for g in gpus)


@contextmanager
def scoped_visible_devices(gpus: Sequence[int]) -> Iterator[str]:
    """Set ``CUDA_VISIBLE_DEVICES`` to the engine's GPUs for the block; restore it after."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    value = visible_devices_value(gpus, before)
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    try:
        yield value
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


@contextmanager
def sigint_shielded() -> Iterator[None]:
    """Block SIGINT in this thread for the block: processes started here never receive a
    terminal Ctrl-C (they inherit the mask; blocking outlives any handler they install)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
