"""Freed heap memory goes back to the system after a batch (the mechanism that keeps a CPU
run's resident memory near its live set), and a user's own ``MALLOC_*`` settings win."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc on Linux")

# glibc raises its mmap threshold when a large mmapped block is freed; later 4 MiB blocks then
# come from the heap, and with a small live object after each they stay resident once freed.
PROBE = """
import sys
from spade_async.hardware.allocator import release_free_memory, tune_malloc
tuned = tune_malloc()
def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096
b = bytearray(8 << 20); del b
blocks, pins = [], []
for _ in range(64):
    blocks.append(bytearray(4 << 20)); pins.append(bytearray(4096))  # > 512 bytes: glibc, not pymalloc
before = rss(); del blocks
kept = rss()
if sys.argv[1] == "release":
    release_free_memory()
print(tuned, (before - kept) >> 20, (before - rss()) >> 20)
"""


def probe(mode: str, **env: str) -> tuple[str, int, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, **env},
        timeout=120,
    ).stdout.split()
    return out[0], int(out[1]), int(out[2])


def test_released_heap_holes_go_back_to_the_system() -> None:
    tuned, freed_by_free, freed_after_release = probe("release")
    assert tuned == "True"
    assert freed_by_free < 64  # the control: free() alone keeps the 256 MiB resident
    assert freed_after_release >= 200  # malloc_trim(0) hands the holes back


def test_without_release_the_holes_stay() -> None:
    _, _, freed = probe("keep")
    assert freed < 64


def test_user_malloc_variables_win() -> None:
    tuned, _, freed = probe("release", MALLOC_ARENA_MAX="4")
    assert tuned == "False" and freed < 64  # neither mallopt nor malloc_trim: the user's glibc settings rule
