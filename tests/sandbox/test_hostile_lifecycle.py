"""Hostile envs against the sandbox machinery itself (issue classes 1-3): a reply nested 1000
levels deep, a workdir tree too deep for recursive deletion, a workdir too big to delete within
a timeout, and a fork-server that stops answering. Each ends only its own env; the same pool
then serves a benign env; the next ``env check`` with the same TMPDIR works."""

# ruff: noqa: ASYNC220, ASYNC240 - tests drive victims and files directly

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from spade_async.admission.validate import validate_source
from spade_async.config import SandboxConfig
from spade_async.sandbox.cleanup import remove_tree
from spade_async.sandbox.errors import EnvProtocolError, SandboxError
from spade_async.sandbox.pool import SandboxPool
from spade_async.sandbox.protocol import decode_reply
from tests.sandbox.conftest import (
    HOSTILE,
    alive,
    assert_serves,
    benign,
    env_check_works,
    hostile,
    shm_tmpdir,
)

pytestmark = pytest.mark.anyio


# -- class 1: one reply ends the run ------------------------------------------------------------


async def test_deep_info_is_refused_by_the_worker(pool: SandboxPool) -> None:
    env = await pool.open(hostile("deep_info"))
    await env.reset(0)
    with pytest.raises(EnvProtocolError, match="nests lists/dicts more than 32 levels"):
        await env.step("1000")
    assert not alive(env.pid)
    async with await pool.open(hostile("deep_info")) as ok:  # 20 levels is an ordinary info dict
        await ok.reset(0)
        assert (await ok.step("20")).obs == "deep"
    await assert_serves(pool)


async def test_forged_deep_reply_ends_only_its_env(pool: SandboxPool) -> None:
    line = b'{"id":3,"ok":true,"info":' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"}"
    with pytest.raises(RecursionError):  # positive control: the decoder itself recurses
        decode_reply(line)
    env = await pool.open(hostile("forged_deep_reply"))
    await env.reset(0)
    with pytest.raises(EnvProtocolError, match="cannot be decoded \\(RecursionError\\)"):
        await env.step("go")
    assert not alive(env.pid) and pool.live == 0
    result = await validate_source(pool, hostile("forged_deep_reply"), max_turns=4)
    assert not result.admitted and result.checks.get("step") is False, result
    await assert_serves(pool)


async def test_validator_never_raises(pool: SandboxPool, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(source: str) -> dict[str, object]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(pool, "inspect", broken)
    result = await validate_source(pool, hostile("deep_info"), max_turns=4)
    assert not result.admitted and result.checks["internal"] is False and "RecursionError" in result.reasons[0]
    monkeypatch.undo()
    await assert_serves(pool)


# -- classes 2 and 3: workdir removal, reaping off the spawn path, fork-server restart --------------

DEEP_CFG = SandboxConfig(
    call_timeout_s=20.0,
    spawn_timeout_s=2.0,
    memory_mib=512,
    max_children=4,
    min_isolation="full",
    disk_inodes=200_000,
    disk_mib=64,
)


@pytest.fixture(scope="module")
def shm_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = shm_tmpdir(tmp_path_factory, "lifecycle")
    yield path
    remove_tree(path)


@pytest.fixture(params=[True, False], ids=["tmpfs-workdir", "plain-workdir"])
async def deep_pool(
    request: pytest.FixtureRequest, shm_tmp: str, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> AsyncIterator[SandboxPool]:
    """A pool under TMPDIR=shm_tmp: with namespaces (tmpfs workdirs) or without (janitor deletes)."""
    monkeypatch.setattr(tempfile, "tempdir", shm_tmp)
    disable = frozenset() if request.param else frozenset({"namespaces"})
    async with await SandboxPool.start(DEEP_CFG, disable=disable) as started:
        yield started


def _wait_gone(path: str, limit_s: float = 30.0) -> bool:
    deadline = time.monotonic() + limit_s
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(path)


def _unsandboxed_tree(where: str, depth: int, width: int) -> None:
    code = (
        "import sys\nfrom spade_async.envs.contract import INJECTED\nns = dict(INJECTED)\n"
        f"exec(open({str(HOSTILE / 'deep_tree.py')!r}).read(), ns)\n"
        f"print(ns['Attack']().step('{depth},{width}')[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=where, capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("BUILT"), done.stdout + done.stderr


async def test_deep_tree_is_removed_everywhere(deep_pool: SandboxPool, shm_tmp: str) -> None:
    control = tempfile.mkdtemp(dir=shm_tmp, prefix="control-")
    _unsandboxed_tree(control, 1500, 10)
    with pytest.raises(RecursionError):  # positive control: what the reap, close and sweep used to call
        shutil.rmtree(control, ignore_errors=True)
    assert remove_tree(control) == 0 and not os.path.exists(control)

    env = await deep_pool.open(hostile("deep_tree"))
    await env.reset(0)
    assert (await env.step("1500,10")).obs == "BUILT 1510"
    workdir = env.workdir
    await env.aclose()
    assert deep_pool._server.alive and deep_pool.events == []
    assert _wait_gone(workdir), "the janitor did not delete the deep workdir"
    await assert_serves(deep_pool)


async def test_stale_folder_sweep_survives_deep_trees(shm_tmp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = os.path.join(shm_tmp, f"spade-sandbox-{dead.pid}-stale")
    os.makedirs(os.path.join(stale, "env-x"))
    _unsandboxed_tree(os.path.join(stale, "env-x"), 1500, 10)
    monkeypatch.setattr(tempfile, "tempdir", shm_tmp)
    async with await SandboxPool.start(DEEP_CFG) as fresh:
        assert not os.path.exists(stale)
        await assert_serves(fresh)
    env_check_works(shm_tmp)


async def test_huge_workdir_is_reaped_off_the_spawn_path(deep_pool: SandboxPool, shm_tmp: str) -> None:
    env = await deep_pool.open(hostile("deep_tree"))
    await env.reset(0)
    assert (await env.step("1,30000")).obs == "BUILT 30001"
    workdir = env.workdir
    await env.aclose()  # the reap only hands the folder on: it cannot outlast the spawn timeout
    await assert_serves(deep_pool)  # a spawn right away, while the janitor is still deleting
    assert deep_pool._server.alive and deep_pool.restarts == 0
    assert _wait_gone(workdir)
    if not deep_pool._server.disk_quota:
        env_check_works(shm_tmp)


async def test_dead_or_stuck_fork_server_is_restarted(pool: SandboxPool) -> None:
    server = pool._server
    held = [await pool.open(benign()) for _ in range(len(pool._warm))]  # use up the warm children
    inner = _serving_zygote(server.process.pid)
    os.kill(inner, signal.SIGSTOP)  # it stops answering (as one stuck in a long reap did)
    try:
        with pytest.raises(SandboxError):
            await pool.open(hostile("deep_info"))
        assert not server.alive  # positive control: without a restart every later spawn fails
    finally:
        os.kill(inner, signal.SIGCONT)
    for env in held:
        await env.aclose()
    await assert_serves(pool)
    assert pool.restarts == 1 and "restarted" in pool.events[0]
    assert pool._server is not server and not alive(server.process.pid)


def _serving_zygote(pid: int) -> int:
    """The process that answers spawn requests: the zygote, or its PID-namespace init child."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pid
    inits = [
        int(c)
        for c in children
        if Path(f"/proc/{c}/status").exists()
        and "NSpid:" in (status := Path(f"/proc/{c}/status").read_text())
        and status.split("NSpid:")[1].split("\n")[0].split()[-1] == "1"
    ]
    return inits[0] if inits else pid
