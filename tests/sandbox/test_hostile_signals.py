"""Hostile envs: signals to the zygote, to a victim process, to every process (-1), and
environment variable leaks (the trainer's secrets must not reach env code)."""

# ruff: noqa: ASYNC220 - tests touch small local files and start victims directly

from __future__ import annotations

import os
import subprocess

import pytest

from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import alive, assert_serves, hostile

pytestmark = pytest.mark.anyio


async def _attack(pool: SandboxPool, name: str, action: str) -> str:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        return (await env.step(action)).obs


async def test_kill_parent(pool: SandboxPool) -> None:
    zygote = pool._server.process.pid
    assert (await _attack(pool, "kill_target", "parent")).startswith("DENIED")
    assert alive(zygote)
    await assert_serves(pool)


async def test_kill_victim(pool: SandboxPool) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        assert (await _attack(pool, "kill_target", str(victim.pid))).startswith("DENIED")
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    await assert_serves(pool)


async def test_kill_everything(pool: SandboxPool) -> None:
    # SIGCONT keeps this harmless even if containment were broken; the call itself must fail
    assert (await _attack(pool, "kill_target", "-1")).startswith("DENIED")
    await assert_serves(pool)


async def test_environment_secrets_do_not_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_TEST_SECRET", "hf_leaked_token_123")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/leak")
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=1.0, min_isolation="full")) as pool:
        obs = await _attack(pool, "env_leak", "")
        assert "hf_leaked_token_123" not in obs and "postgres://" not in obs
        assert "/proc" not in obs  # no environ file was readable
        assert os.environ["SPADE_TEST_SECRET"] == "hf_leaked_token_123"
        await assert_serves(pool)
