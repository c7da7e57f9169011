"""glibc malloc: fewer heap arenas, and freed heap memory handed back after each batch.

Why: on a CPU, torch allocates activations, logits and KV caches of a few KiB to tens of MiB
from the C heap, from several threads (the engine's and the learner's). glibc raises its
mmap threshold whenever a large block is freed (up to 32 MiB), so after the first step those
blocks come from per-thread heap arenas; freed, they stay in the process as holes between
live small objects and are never returned. ``configs/tiny_learn.toml`` (3 steps,
SmolLM2-135M, 2 cores) peaked at 8.9 GB RSS with glibc's defaults.

Two measured ways out, and why this module takes the second:

- a fixed 1 MiB mmap threshold (``MALLOC_MMAP_THRESHOLD_``) cut the peak to 3.0 GB, but every
  KV-cache tensor the decode loop allocates per token then costs an ``mmap`` and fresh
  zeroed pages: generation fell from 43.6 to 26.7 tokens/s (batch 16, 512-token prompts,
  ``benchmarks/engine.py``);
- keeping glibc's dynamic threshold (fast reuse inside a batch) and calling ``malloc_trim(0)``
  after each generation batch and each learner step hands the holes back between them, with
  two arenas instead of eight per core.

A user who sets any ``MALLOC_*`` variable keeps glibc's behaviour under their own settings;
other C libraries (macOS, musl) are left alone.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any

M_ARENA_MAX = -8
"""``mallopt`` parameter number from glibc's ``malloc.h``."""
ARENAS = 2
"""Heap arenas: the engine's and the learner's threads, not glibc's eight per core."""


@functools.cache
def _glibc() -> Any | None:
    """glibc's handle, or None (not Linux, not glibc, or the user set ``MALLOC_*``)."""
    if not sys.platform.startswith("linux") or any(key.startswith("MALLOC_") for key in os.environ):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: AttributeError elsewhere)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def tune_malloc() -> bool:
    """Limit glibc to :data:`ARENAS` heap arenas (call before threads start); False when left alone."""
    libc = _glibc()
    return libc is not None and libc.mallopt(M_ARENA_MAX, ARENAS) == 1


def release_free_memory() -> None:
    """Hand free heap pages back to the system (``malloc_trim(0)``); a no-op off glibc.
    Called after each generation batch and each learner step: the freed activations and KV
    caches of one are not kept as resident holes through the other."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
