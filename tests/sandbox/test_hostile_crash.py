"""Hostile envs: exits, segfaults, hangs, ignored SIGTERM, import-time failures and hangs."""

from __future__ import annotations

import pytest

from spade_async.sandbox.errors import EnvCrashed, EnvTimeout, SandboxError
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import alive, assert_serves, hostile

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("sys_exit", "SystemExit"),
        ("os_exit", "exit status 3"),
        ("segfault", "SIGSEGV"),
        ("c_recursion", "SIGSEGV|RecursionError|MemoryError|did not answer"),
    ],
)
async def test_crash_in_step(pool: SandboxPool, name: str, message: str) -> None:
    env = await pool.open(hostile(name))
    await env.reset(0)
    with pytest.raises((EnvCrashed, EnvTimeout), match=message):
        await env.step("go")
    assert not alive(env.pid)
    await assert_serves(pool)


@pytest.mark.parametrize("name", ["spin", "sleep", "ignore_sigterm"])
async def test_hang_in_step_is_killed_at_the_timeout(pool: SandboxPool, name: str) -> None:
    env = await pool.open(hostile(name))
    await env.reset(0)
    # The timeout path fired (not a crash or an EOF) and the child is gone; no wall-clock bound,
    # which would flake under load (a hang past the call timeout fails via pytest-timeout).
    with pytest.raises(EnvTimeout, match=r"did not answer within 0\.5 s"):
        await env.step("go")
    assert not alive(env.pid)
    await assert_serves(pool)


async def test_hang_in_reset(pool: SandboxPool) -> None:
    env = await pool.open(hostile("reset_hang"))
    with pytest.raises(EnvTimeout, match="reset"):
        await env.reset(0)
    assert not alive(env.pid)
    await assert_serves(pool)


async def test_background_thread_dies_with_the_child(pool: SandboxPool) -> None:
    env = await pool.open(hostile("thread_spinner"))
    await env.reset(0)
    assert (await env.step("go")).obs == "spinning"
    assert (await env.step("go")).obs == "spinning"  # the spinning thread does not block calls
    await env.aclose()
    assert not alive(env.pid)
    await assert_serves(pool)


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("import_error", EnvCrashed, "ValueError: broken at import"),
        ("import_exit", EnvCrashed, "exit status 7"),
        ("import_hang", EnvTimeout, "load"),
        ("import_sleep", EnvTimeout, "load"),
        ("syntax_error", SandboxError, "SyntaxError at line 6"),
    ],
)
async def test_import_time_failures(pool: SandboxPool, name: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        await pool.open(hostile(name))
    assert pool.live == 0
    await assert_serves(pool)
