"""Hostile envs: output floods, forged protocol replies, invalid or oversized replies."""

from __future__ import annotations

import os

import pytest

from spade_async.sandbox.errors import EnvProtocolError
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import alive, assert_serves, hostile

pytestmark = pytest.mark.anyio


async def test_print_flood_is_captured_and_capped(pool: SandboxPool) -> None:
    async with await pool.open(hostile("flood_print")) as env:
        await env.reset(0)
        result = await env.step("go")
        assert result.obs == "flooded"
        assert len(result.output) < 8192 + 100 and "characters dropped" in result.output
    await assert_serves(pool)


async def test_fd_flood_goes_nowhere(pool: SandboxPool) -> None:
    # The child's fds 1 and 2 are /dev/null (checked on the live child: a capture fixture in
    # this process could never see a grandchild of the zygote), and writing 32 MB to them
    # neither blocks the child nor reaches the protocol channel.
    async with await pool.open(hostile("flood_fd")) as env:
        await env.reset(0)
        assert [os.readlink(f"/proc/{env.pid}/fd/{fd}") for fd in (1, 2)] == ["/dev/null", "/dev/null"]
        result = await env.step("go")
        assert result.obs == "flooded" and "LEAKED-TO-FD" not in result.output
    await assert_serves(pool)


async def test_forged_reply_on_stdout_is_only_output(pool: SandboxPool) -> None:
    async with await pool.open(hostile("forged_stdout")) as env:
        await env.reset(0)
        result = await env.step("go")
        assert (result.obs, result.reward, result.terminated) == ("real", 0.0, False)
        assert '"forged"' in result.output
    await assert_serves(pool)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("forged_socket_id", "does not match"),
        ("forged_socket_garbage", "malformed"),
        ("socket_no_newline", "exceeds"),
        ("huge_obs", "exceeds"),
        ("nan_reward", "finite"),
        ("inf_reward", "finite"),
        ("string_reward", "reward must be a float"),
        ("unserialisable_info", "serialisable"),
        ("int_obs", "observation must be a str"),
    ],
)
async def test_invalid_reply_kills_the_child(pool: SandboxPool, name: str, message: str) -> None:
    env = await pool.open(hostile(name))
    await env.reset(0)
    with pytest.raises(EnvProtocolError, match=message):
        await env.step("go")
    assert not alive(env.pid)
    with pytest.raises(Exception, match="unusable"):
        await env.step("again")
    await env.aclose()
    assert pool.live == 0
    await assert_serves(pool)
