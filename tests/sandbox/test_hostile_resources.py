"""Hostile envs: memory bombs and creep, huge files, many fds, many threads, rlimit raising."""

# ruff: noqa: ASYNC240 - tests touch small local files and start victims directly

from __future__ import annotations

import os

import anyio
import pytest

from spade_async.sandbox.errors import EnvCrashed, EnvTimeout, SandboxError
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import TEST_CFG, alive, assert_serves, hostile

pytestmark = pytest.mark.anyio


async def test_memory_bomb(pool: SandboxPool) -> None:
    env = await pool.open(hostile("memory_bomb"))
    await env.reset(0)
    with pytest.raises(EnvCrashed, match="MemoryError"):
        await env.step("go")
    await assert_serves(pool)


async def test_memory_creep_hits_the_limit(pool: SandboxPool) -> None:
    env = await pool.open(hostile("memory_creep"))
    await env.reset(0)
    kept = 0
    with pytest.raises(EnvCrashed, match="MemoryError"):
        for _ in range(50):
            kept = int((await env.step("go")).obs)
    assert kept * 64 < TEST_CFG.memory_mib
    await assert_serves(pool)


async def test_memory_bomb_that_catches_memoryerror_times_out(pool: SandboxPool) -> None:
    env = await pool.open(hostile("memory_catch_spin"))
    await env.reset(0)
    with pytest.raises(EnvTimeout):
        await env.step("go")
    assert not alive(env.pid)
    await assert_serves(pool)


async def test_huge_file_is_capped(pool: SandboxPool) -> None:
    async with await pool.open(hostile("huge_file")) as env:
        await env.reset(0)
        obs = (await env.step("go")).obs
        assert obs.startswith("DENIED 27")  # EFBIG
        assert int(obs.split("size=")[1]) <= 16 * 1024**2
        workdir = env.workdir
    await assert_serves(pool)
    # Deleted with the child: by the zygote's freer process, at the lowest priority and so not at
    # once on a busy machine (bounded wait; a workdir that is never deleted still fails).
    for _ in range(600):  # up to 30 s, polled: the freer process has no event to wait on
        if not os.path.exists(workdir):
            break
        await anyio.sleep(0.05)
    assert not os.path.exists(workdir)


@pytest.mark.parametrize(("name", "limit"), [("many_fds", 64), ("many_threads", 64)])
async def test_fd_and_thread_limits(pool: SandboxPool, name: str, limit: int) -> None:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        obs = (await env.step("go")).obs
        assert obs.startswith("DENIED"), obs
        assert int(obs.rsplit("=", 1)[1]) <= limit
    await assert_serves(pool)


@pytest.mark.parametrize("name", ["raise_rlimit", "setuid_root"])
async def test_privilege_raising_is_denied(pool: SandboxPool, name: str) -> None:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        assert (await env.step("go")).obs.startswith("DENIED")
    await assert_serves(pool)


async def test_oversized_source_is_refused_before_spawning(pool: SandboxPool) -> None:
    with pytest.raises(SandboxError, match="byte limit"):
        await pool.open("x = 1\n" * 20_000)
    assert pool.live == 0
