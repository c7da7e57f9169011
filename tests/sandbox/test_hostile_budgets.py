"""Hostile envs against per-env budgets (issue classes 4 and 10): a workdir filled past its byte
or inode budget (a size-capped tmpfs), and a thread burning CPU between calls (accounted by the
child's CPU clock; children run at nice 19). Positive controls show the attack succeeds where
the budget does not apply."""

# ruff: noqa: ASYNC230, ASYNC240 - tests drive victims and files directly

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import AsyncIterator

import anyio
import pytest

from spade_async.config import SandboxConfig
from spade_async.sandbox.errors import EnvCrashed
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import (
    alive,
    assert_serves,
    env_check_works,
    host_allows_private_tmpfs,
    hostile,
    shm_tmpdir,
    unsandboxed,
)

pytestmark = pytest.mark.anyio

BUDGET_CFG = SandboxConfig(
    call_timeout_s=5.0,
    spawn_timeout_s=2.0,
    memory_mib=512,
    max_children=4,
    min_isolation="full",
    disk_mib=8,
    disk_inodes=300,
    idle_cpu_s=0.05,
)


@pytest.fixture(scope="module")
async def budget_pool(tmp_path_factory: pytest.TempPathFactory, anyio_backend: str) -> AsyncIterator[SandboxPool]:
    old = tempfile.tempdir
    tempfile.tempdir = shm_tmpdir(tmp_path_factory, "budget")
    try:
        async with await SandboxPool.start(BUDGET_CFG) as started:
            yield started
    finally:
        tempfile.tempdir = old


def require_disk_quota(pool: SandboxPool) -> None:
    """Skip only where the host cannot mount a private tmpfs (probed apart from the sandbox);
    where it can, a missing disk budget layer fails (``min_isolation = "full"`` does not require it)."""
    if pool.isolation.layers["disk_quota"]:
        return
    if host_allows_private_tmpfs():
        pytest.fail("this host allows private tmpfs mounts, but the sandbox reports no disk budget layer")
    pytest.skip("no private mount namespace on this host: the disk budget layer cannot exist here")


@pytest.mark.parametrize(
    ("action", "message"), [("32", "filled its workdir budget of 8 MiB"), ("-1000", "used all 300 files/folders")]
)
async def test_disk_and_inode_budget(budget_pool: SandboxPool, action: str, message: str) -> None:
    require_disk_quota(budget_pool)
    env = await budget_pool.open(hostile("disk_fill"))
    await env.reset(0)
    with pytest.raises(EnvCrashed, match=message):
        await env.step(action)
    assert not alive(env.pid)
    control = unsandboxed("disk_fill", action)  # the same loop with no budget runs to the end
    assert control == f"DONE {abs(int(action))} errno=0", control
    await assert_serves(budget_pool)
    if int(action) > 0:
        env_check_works(str(tempfile.tempdir))


async def test_cpu_burned_between_calls_fails_the_env(budget_pool: SandboxPool) -> None:
    env = await budget_pool.open(hostile("idle_burner"))
    await env.reset(0)
    with open(f"/proc/{env.pid}/stat") as handle:
        assert int(handle.read().rsplit(")", 1)[1].split()[16]) == 19  # nice 19: the lowest priority
    await env.step("go")  # starts the burning thread
    deadline = time.monotonic() + 20
    with pytest.raises(EnvCrashed, match="s of CPU between calls"):
        while time.monotonic() < deadline:  # idle gaps, as while the agent generates
            await anyio.sleep(0.25)
            await env.step("go")
    assert env.idle_cpu_s > BUDGET_CFG.idle_cpu_s  # positive control: the thread really burned CPU
    assert not alive(env.pid)
    async with await budget_pool.open(hostile("idle_burner")) as calm:  # no idle gap, no thread: fine
        await calm.reset(0)
        assert calm.idle_cpu_s < BUDGET_CFG.idle_cpu_s
    await assert_serves(budget_pool)


async def test_workdirs_are_private_tmpfs_mounts(budget_pool: SandboxPool) -> None:
    """The live (warm) children's tmpfs workdirs are invisible to the trainer's mount table."""
    require_disk_quota(budget_pool)
    async with await budget_pool.open(hostile("disk_fill")) as env:
        assert os.path.isdir(env.workdir)
        with open("/proc/self/mounts") as handle:
            mounts = handle.read()
        assert env.workdir not in mounts and "spade-sandbox-" not in mounts
