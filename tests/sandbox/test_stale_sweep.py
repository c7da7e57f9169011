"""A pool's start sweeps folders left by killed trainers, and only those.

The folder name carries the owner's pid, but a pid means nothing across PID namespaces (a
trainer under ``unshare --pid`` or in a container sees every other trainer's pid as free): a
live run's sandbox folder was once deleted under it that way and every later episode failed.
Liveness is now an ``flock`` the owner holds on a file in its folder. Everything here happens
in a temp folder of the test's own (``tempfile.tempdir`` is pointed at it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spade_async.sandbox import pool as pool_mod

HOLD = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # reaped: no such process now (reuse within the test is vanishingly unlikely)


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _folder(root: Path, pid: int, locked: bool) -> Path:
    folder = root / f"{pool_mod.BASE_PREFIX}{pid}-abc"
    folder.mkdir()
    if locked:
        (folder / pool_mod.OWNER_LOCK).write_text("")
    return folder


def test_a_live_owner_whose_pid_looks_dead_keeps_its_folder(tmp_root: Path) -> None:
    folder = _folder(tmp_root, _dead_pid(), locked=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder / pool_mod.OWNER_LOCK)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        pool_mod._sweep_stale_base_dirs()
        assert folder.exists(), "a live trainer's folder was swept because its pid was not visible"
    finally:
        holder.kill()
        holder.wait()
    pool_mod._sweep_stale_base_dirs()  # the holder died: the kernel dropped its lock
    assert not folder.exists()


def test_folders_of_dead_owners_are_swept_and_the_callers_own_is_kept(tmp_root: Path) -> None:
    unlocked_dead = _folder(tmp_root, _dead_pid(), locked=False)  # from before the lock: pid rule
    unlocked_alive = _folder(tmp_root, os.getpid(), locked=False)
    base = pool_mod._make_base_dir()  # sweeps first, then holds its own lock
    try:
        assert not unlocked_dead.exists() and unlocked_alive.exists()
        assert Path(base, pool_mod.OWNER_LOCK).exists()
        pool_mod._sweep_stale_base_dirs()
        assert Path(base).exists(), "a pool swept its own folder"
    finally:
        assert pool_mod._release_base_dir(base) == 0
    assert not Path(base).exists() and base not in pool_mod._owner_locks
