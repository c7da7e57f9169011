"""A lost engine replica's private adapter folder is removed by the next replica on its host:
folders of ended processes go, folders of live processes and foreign names stay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from spade_async.cluster.engine_actor import ADAPTER_DIR_PREFIX, sweep_orphaned_adapter_dirs


def ended_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_folders_of_ended_replicas_are_removed_and_nothing_else(tmp_path: Path) -> None:
    dead = tmp_path / f"{ADAPTER_DIR_PREFIX}{ended_pid()}-abc123"
    (dead / "v1-x").mkdir(parents=True)
    (dead / "v1-x" / "adapter_model.safetensors").write_bytes(b"weights")
    alive = tmp_path / f"{ADAPTER_DIR_PREFIX}{os.getpid()}-def456"
    alive.mkdir()
    legacy = tmp_path / f"{ADAPTER_DIR_PREFIX}_414_s0c"  # an older name without a process id
    legacy.mkdir()
    other = tmp_path / "someone-else-12345-x"
    other.mkdir()
    a_file = tmp_path / f"{ADAPTER_DIR_PREFIX}{ended_pid()}-file"
    a_file.write_text("not a folder")

    assert sweep_orphaned_adapter_dirs(tmp_path) == [dead]
    assert not dead.exists()
    assert alive.is_dir() and legacy.is_dir() and other.is_dir() and a_file.is_file()
