"""Side channels and host pressure (issue 22 class 5): folder watches (inotify, fanotify,
dnotify), file locks between children of different uids, the OOM killer's choice, and the
memory budget against the host's. Positive controls run the same attack unsandboxed on files
and processes this test created; each test ends by the pool serving a benign env."""

# ruff: noqa: ASYNC220, ASYNC240 - tests plant small local files and start a bystander directly

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spade_async.sandbox import hostmem
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import TEST_CFG, assert_serves, hostile, shm_tmpdir, unsandboxed

pytestmark = pytest.mark.anyio
EPERM = str(errno.EPERM)


def _parts(obs: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in obs.split())


async def test_folder_watches_are_denied(pool: SandboxPool, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = Path(shm_tmpdir(tmp_path_factory, "inotify"))  # traversable by every uid
    try:
        watched = base / "private"
        watched.mkdir()
        watched.chmod(0o755)  # Landlock forbids listing it; inotify needs no Landlock right
        (watched / "secret-name.txt").write_text("x")
        async with await pool.open(hostile("inotify_watch")) as env:
            await env.reset(0)
            got = _parts((await env.step(str(watched))).obs)
        assert got == {"inotify_init1": EPERM, "fanotify_init": EPERM, "dnotify": EPERM}, got
        control = _parts(unsandboxed("inotify_watch", str(watched)))  # watches only the test's folder
        assert control["inotify_init1"] == "OK" and control["add_watch"] == "OK", control
        assert control["dnotify"] == "OK", control
    finally:
        shutil.rmtree(base)
    await assert_serves(pool)


async def test_file_locks_are_denied(pool: SandboxPool, tmp_path: Path) -> None:
    async with await pool.open(hostile("file_lock")) as env:
        await env.reset(0)
        got = _parts((await env.step("/etc/ld.so.cache")).obs)  # a system file every child may read
    assert got == {"flock": EPERM, "posix": EPERM, "ofd": EPERM, "getlk": EPERM}, got
    mine = tmp_path / "lockable.txt"
    mine.write_text("x")
    control = _parts(unsandboxed("file_lock", str(mine)))  # the control locks only the test's file
    assert control == {"flock": "OK", "posix": "OK", "ofd": "OK", "getlk": "OK"}, control
    await assert_serves(pool)


async def test_two_children_cannot_signal_through_a_lock(pool: SandboxPool) -> None:
    """The channel itself: one child holds a lock, the other probes it; both are refused."""
    async with await pool.open(hostile("file_lock")) as sender, await pool.open(hostile("file_lock")) as receiver:
        assert sender._spawned.uid != receiver._spawned.uid or os.geteuid() != 0
        await sender.reset(0)
        await receiver.reset(0)
        for env in (sender, receiver):
            assert set(_parts((await env.step("/etc/ld.so.cache")).obs).values()) == {EPERM}
    await assert_serves(pool)


async def test_children_are_the_oom_killers_first_choice(pool: SandboxPool) -> None:
    async with await pool.open(hostile("file_lock")) as env:
        assert Path(f"/proc/{env.pid}/oom_score_adj").read_text().strip() == "1000"
    bystander = subprocess.Popen(["sleep", "30"])  # positive control: a plain child keeps its parent's score
    try:
        assert Path(f"/proc/{bystander.pid}/oom_score_adj").read_text() == Path("/proc/self/oom_score_adj").read_text()
        assert Path("/proc/self/oom_score_adj").read_text().strip() != "1000"
    finally:
        bystander.kill()
        bystander.wait()
    await assert_serves(pool)


def test_memory_budget_is_checked_against_the_host(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   16777216 kB\n")
    available = hostmem.host_memory_bytes(str(meminfo), str(tmp_path / "no-cgroup"))
    assert available == 16 << 30
    cgroup = tmp_path / "memory.max"
    cgroup.write_text("8589934592\n")
    assert hostmem.host_memory_bytes(str(meminfo), str(cgroup)) == 8 << 30
    cgroup.write_text("max\n")
    assert hostmem.host_memory_bytes(str(meminfo), str(cgroup)) == 16 << 30
    warning = hostmem.budget_warning(32, 1024, available)
    assert warning is not None and "32 env children x 1024 MiB" in warning and "sandbox.max_children" in warning
    assert hostmem.budget_warning(8, 1024, available) is None
    assert hostmem.budget_warning(32, 1024, None) is None


async def test_pool_start_warns_when_the_budget_exceeds_the_host(caplog: pytest.LogCaptureFixture) -> None:
    available = hostmem.host_memory_bytes()
    assert available is not None
    # twice what the host can hold: the pool reads the host's free memory again when it starts,
    # and memory other tests free in between must not turn the over-budget case into a fitting one
    children = 2 * (available // (TEST_CFG.memory_mib << 20)) + 1
    cfg = TEST_CFG.model_copy(update={"max_children": children, "warm_children": 0})
    with caplog.at_level(logging.WARNING, logger="spade_async.sandbox.pool"):
        async with await SandboxPool.start(cfg) as big:
            assert big.warnings and f"{children} env children" in big.warnings[0]
            await assert_serves(big)
    assert any("sandbox memory budget" in r.getMessage() for r in caplog.records)
    async with await SandboxPool.start(TEST_CFG) as small:  # 8 x 512 MiB fits this host
        assert small.warnings == []
