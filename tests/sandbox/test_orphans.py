"""The trainer killed with SIGKILL while a child runs: no zygote or child may survive it, not
even a child that cleared its parent-death signal and ignores SIGTERM and end-of-file (issue
class 6). With namespaces the zygote is PID 1 of its PID namespace (the kernel kills the rest
when it dies); without them the parent-death signal is locked by seccomp."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.sandbox.conftest import REPO, alive, unsandboxed

TRAINER = """
import anyio, sys
from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import hostile

async def main(fixture, disable):
    pool = await SandboxPool.start(SandboxConfig(call_timeout_s=60, min_isolation="full"), disable=frozenset(disable))
    env = await pool.open(hostile(fixture))
    await env.reset(0)
    if fixture == "clear_pdeathsig":
        print((await env.step("probe")).obs, flush=True)
        env = await pool.open(hostile(fixture))
        await env.reset(0)
    else:
        print("-", flush=True)
    print(pool._server.process.pid, env.pid, flush=True)
    await env.step("hang" if fixture == "clear_pdeathsig" else "go")

anyio.run(main, sys.argv[1], sys.argv[2:])
"""


@pytest.mark.parametrize(
    ("fixture", "disable"),
    [
        ("spin", []),
        ("clear_pdeathsig", []),
        ("clear_pdeathsig", ["namespaces"]),
    ],
    ids=["spin", "cleared-pdeathsig-pid-namespace", "cleared-pdeathsig-no-namespace"],
)
def test_no_orphan_survives_the_trainer(fixture: str, disable: list[str]) -> None:
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER, fixture, *disable],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert trainer.stdout is not None
    probe = trainer.stdout.readline().strip()
    zygote, child = (int(x) for x in trainer.stdout.readline().split())
    if fixture == "clear_pdeathsig":
        assert probe == "DENIED 1", probe  # PR_SET_PDEATHSIG is locked
        assert unsandboxed(fixture, "probe") == "CLEARED"  # positive control
    time.sleep(0.3)
    assert alive(zygote) and alive(child)
    trainer.send_signal(signal.SIGKILL)
    trainer.wait()
    deadline = time.monotonic() + 5
    while (alive(zygote) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(zygote) and not alive(child)
