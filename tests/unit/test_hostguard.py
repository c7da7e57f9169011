"""The host guard (tests/hostguard.py) sees what a test could do to the host, shown on processes
and files that these tests create themselves; and the suite's own process is watched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests import hostguard


def test_a_rescheduled_process_is_reported() -> None:
    victim = subprocess.Popen(["sleep", "30"])  # created here: the only process this test changes
    try:
        before = hostguard.snapshot(include=[victim.pid], paths=[])
        assert any(pid == victim.pid for pid, _ in before.processes)
        os.setpriority(os.PRIO_PROCESS, victim.pid, 19)
        cpus = sorted(os.sched_getaffinity(victim.pid))
        if len(cpus) > 1:
            os.sched_setaffinity(victim.pid, cpus[:1])
        changes = hostguard.compare(before, hostguard.snapshot(include=[victim.pid], paths=[]))
        mine = [c for c in changes if c.startswith(f"pid {victim.pid} ")]
        assert any(" nice " in c for c in mine), changes
        assert len(cpus) == 1 or any(" affinity " in c for c in mine), changes
    finally:
        victim.kill()
        victim.wait()


def test_the_test_process_is_watched_and_its_children_are_not() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        snap = hostguard.snapshot(paths=[], min_age_s=0.0)
        pids = {pid for pid, _ in snap.processes}
        assert os.getpid() in pids  # a control that re-prioritises the test run itself is caught
        assert child.pid not in pids  # the suite's own children may be changed freely
    finally:
        child.kill()
        child.wait()


def test_changed_and_deleted_files_are_reported(tmp_path: Path) -> None:
    kept, changed, gone = (tmp_path / name for name in ("kept", "changed", "gone"))
    for path in (kept, changed, gone):
        path.write_text("x")
    paths = [(tmp_path, True, True)]
    before = hostguard.snapshot(paths=paths, include=[], min_age_s=1e9)
    changed.chmod(0o600)
    changed.write_text("longer")
    gone.unlink()
    (tmp_path / "new").write_text("x")  # created during the module: not reported (whose is it?)
    changes = hostguard.compare(before, hostguard.snapshot(paths=paths, include=[], min_age_s=1e9))
    assert sorted(c.split(":")[0] for c in changes) == [str(changed), str(gone)], changes


def test_default_paths_cover_etc_and_ssh() -> None:
    watched = {str(folder) for folder, _, _ in hostguard.default_paths()}
    assert {"/etc", str(Path.home() / ".ssh")} <= watched
