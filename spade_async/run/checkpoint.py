"""Atomic, complete checkpoints: the adapter, the learner, the RNGs and the whole curriculum.

Why this order: files are written into a temporary folder, fsynced, and renamed to
``checkpoints/step_N`` (a rename is atomic on one filesystem; N is the step it was taken
after, counted from 1 as the console counts: spade_async.util.steps); only then is the row in the
``checkpoints`` table committed. A kill -9 at any moment leaves either no row (the folder,
if any, is ignored and cleaned) or a row whose folder is complete. Resume reads the newest
row, restores everything, and deletes the database rows written after that step, so no
episode or step is counted twice.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from spade_async.memory.queries import checkpoint_folders
from spade_async.util.failpoints import failpoint
from spade_async.util.steps import ADAPTER_DIR, checkpoint_name

STATE_FILE = "state.pt"
VERSION_FILE = "adapter_version"
"""Text file holding the learner's adapter version at the checkpoint (read by adapter pruning)."""


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(Path(dirpath) / name, "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def rng_states() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


def write_checkpoint(run_dir: Path, step: int, *, learner: Any | None, snapshot: dict[str, Any], config_hash: str) -> Path:
    """Write the checkpoint after internal step ``step`` (0-based) atomically as
    ``checkpoints/step_{step + 1}`` and return its path (blocking; run in a thread)."""
    root = run_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / checkpoint_name(step)
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    state = {
        "step": step,
        "config_hash": config_hash,
        "snapshot": snapshot,
        "rng": rng_states(),
        "learner": learner.state_dict() if learner is not None else None,
    }
    if learner is not None:
        learner.save_adapter(tmp / ADAPTER_DIR)
        (tmp / VERSION_FILE).write_text(f"{int(learner.version)}\n")
    torch.save(state, tmp / STATE_FILE)
    _fsync_tree(tmp)
    failpoint("checkpoint_files")  # files written, not yet renamed or committed
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return final


def read_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint's state (our own file: full unpickling is intended)."""
    return torch.load(Path(path) / STATE_FILE, weights_only=False)


def prune_checkpoints(run_dir: Path, keep: int, committed_steps: set[int]) -> None:
    """Delete temp folders and all but the newest ``keep`` committed checkpoints
    (``committed_steps``: internal 0-based steps, as in the database)."""
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return
    for leftover in root.glob(".tmp-step_*"):
        shutil.rmtree(leftover, ignore_errors=True)
    folders = {number - 1: path for number, path in checkpoint_folders(run_dir).items()}  # by internal step
    newest = sorted(s for s in folders if s in committed_steps)[-keep:]
    for s, path in folders.items():
        if s not in newest:
            shutil.rmtree(path, ignore_errors=True)
