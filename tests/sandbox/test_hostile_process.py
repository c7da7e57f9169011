"""Hostile envs: fork, fork bombs, subprocess, os.system, exec, posix_spawn, raw clone, a
grandchild that calls setsid. Each tries to create a marker file outside the sandbox; the
positive control shows the same code creates it when run unsandboxed."""

# ruff: noqa: ASYNC240 - tests touch small local files and start victims directly

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from spade_async.sandbox.errors import EnvCrashed, SandboxError
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import assert_serves, hostile, session_members, unsandboxed

pytestmark = pytest.mark.anyio


DENIED = {
    "fork": "DENIED 1",
    "fork_bomb": "denied=200",
    "subprocess_run": "DENIED PermissionError",
    "os_exec": "DENIED 1",
    "posix_spawn": "DENIED 1",
    "grandchild_setsid": "DENIED 1",
    "raw_clone": "DENIED 1",
}
"""What the attack reports when the sandbox refuses it (EPERM from seccomp): the child must
live on and say so; a crash would hide whether the process layer did its job."""


@pytest.mark.parametrize(
    "name",
    ["fork", "fork_bomb", "subprocess_run", "os_system", "os_exec", "posix_spawn", "grandchild_setsid", "raw_clone"],
)
async def test_no_new_process(pool: SandboxPool, tmp_path: Path, name: str) -> None:
    marker = tmp_path / f"{name}.marker"
    tmp_path.chmod(0o777)  # only the sandbox may stop the child here, not the directory mode
    env = await pool.open(hostile(name))
    await env.reset(0)
    try:
        result = await env.step(str(marker))
    except SandboxError as exc:  # os.system may take the child down; containment is what matters
        assert name not in DENIED, f"{name}: the child crashed ({exc}) instead of being refused"
        assert "unusable" not in str(exc)
    else:  # outside the try: the test's own assertion failures must not be swallowed
        assert "FORKED" not in result.obs and "ESCAPED" not in result.obs and "CLONED" not in result.obs
        if name in DENIED:
            assert result.obs == DENIED[name]
        await anyio.sleep(0.7 if name == "grandchild_setsid" else 0.05)
        assert session_members(env.pid) == [env.pid]
    await env.aclose()
    await anyio.sleep(0.6 if name == "grandchild_setsid" else 0)
    assert not marker.exists()
    await assert_serves(pool)
    if name not in ("fork_bomb", "grandchild_setsid", "raw_clone"):  # too dangerous to run for real
        unsandboxed(name, str(marker))
        assert marker.exists(), "positive control: the attack works without the sandbox"


async def test_x32_syscall_bypass_is_closed(pool: SandboxPool) -> None:
    async with await pool.open(hostile("x32_socket")) as env:
        await env.reset(0)
        with pytest.raises(EnvCrashed, match="SIGSYS"):  # libseccomp kills foreign-ABI syscalls
            await env.step("go")
    await assert_serves(pool)
