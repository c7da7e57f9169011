"""Disk budget of ``run_dir/adapters``: keep the newest versions and the checkpointed ones.

Why: the learner writes a PEFT folder per step (``adapters/vN``, about 260 MB for a 4B model
at rank 32, so ~100 GB over a 400-step run) and the engine loads it by path. Only the newest
few are ever read again: the live one, the previous one (vLLM reloads an adapter from its
path when requests still use it after it was swapped out), and the versions the kept
checkpoints were taken at (so the adapter of every resumable state stays inspectable next to
the others). Everything else is deleted after each new version.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from spade_async.memory.run_dir import RunDir
from spade_async.run.checkpoint import VERSION_FILE


def adapter_folder(run_dir: Path, version: int) -> Path:
    """Where the learner's adapter version ``version`` is written: ``run_dir/adapters/vN``."""
    return RunDir(Path(run_dir)).adapters / f"v{version}"


def adapter_versions(run_dir: Path) -> list[int]:
    """Versions present as ``run_dir/adapters/vN`` folders, oldest first."""
    root = RunDir(Path(run_dir)).adapters
    if not root.is_dir():
        return []
    return sorted(int(p.name[1:]) for p in root.iterdir() if p.is_dir() and p.name[:1] == "v" and p.name[1:].isdigit())


def checkpointed_versions(run_dir: Path) -> set[int]:
    """Adapter versions the checkpoints in ``run_dir/checkpoints`` were taken at."""
    root = RunDir(Path(run_dir)).checkpoints
    versions: set[int] = set()
    for marker in root.glob(f"step_*/{VERSION_FILE}") if root.is_dir() else ():
        text = marker.read_text().strip()
        if text.isdigit():
            versions.add(int(text))
    return versions


def prune_adapters(run_dir: Path, keep: int, protect: Iterable[int] = ()) -> list[int]:
    """Delete every ``adapters/vN`` except the newest ``keep``, the checkpointed versions and
    ``protect`` (e.g. the live version); return the deleted versions."""
    versions = adapter_versions(run_dir)
    kept = set(versions[-keep:]) | checkpointed_versions(run_dir) | set(protect)
    deleted = [v for v in versions if v not in kept]
    for v in deleted:
        shutil.rmtree(adapter_folder(run_dir, v), ignore_errors=True)
    return deleted
