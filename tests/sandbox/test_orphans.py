"""The trainer killed with SIGKILL while a child spins: no zygote or child may survive it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.sandbox.conftest import alive

TRAINER = """
import anyio, sys
from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import hostile

async def main():
    pool = await SandboxPool.start(SandboxConfig(call_timeout_s=60))
    env = await pool.open(hostile("spin"))
    await env.reset(0)
    print(pool._server.process.pid, env.pid, flush=True)
    await env.step("go")

anyio.run(main)
"""


def test_no_orphan_survives_the_trainer() -> None:
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER], stdout=subprocess.PIPE, text=True,
                               cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert trainer.stdout is not None
    zygote, child = (int(x) for x in trainer.stdout.readline().split())
    time.sleep(0.2)
    assert alive(zygote) and alive(child)
    trainer.send_signal(signal.SIGKILL)
    trainer.wait()
    deadline = time.monotonic() + 3
    while (alive(zygote) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(zygote) and not alive(child)
