"""Sandbox test helpers: one pool per test module, fixture sources, positive controls.

Why module-scoped pools: starting a zygote costs ~0.3 s; a hostile env can only ever kill its
own child, and every test proves the shared pool still serves the next env afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxPool

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"
ENVS = Path(__file__).resolve().parent / "envs"
TEST_CFG = SandboxConfig(call_timeout_s=0.5, spawn_timeout_s=1.5, memory_mib=512, max_children=8, min_isolation="full")

_HARNESS = """
import json, sys
from spade_async.envs.contract import INJECTED
ns = dict(INJECTED, __name__="env")
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), ns)
env = ns["Attack"]()
env.reset(0)
print(json.dumps(env.step(sys.argv[2])[0]))
"""


def hostile(name: str) -> str:
    return (HOSTILE / f"{name}.py").read_text()


def benign(name: str = "guess") -> str:
    return (ENVS / f"{name}.py").read_text()


def unsandboxed(name: str, action: str) -> str:
    """Positive control: the same attack in a plain subprocess; returns its observation."""
    with tempfile.TemporaryDirectory() as workdir:
        done = subprocess.run(
            [sys.executable, "-c", _HARNESS, str(HOSTILE / f"{name}.py"), action],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=workdir,
        )
    return (
        json.loads(done.stdout.strip().splitlines()[-1])
        if done.stdout.strip()
        else f"no output (rc {done.returncode}): {done.stderr[-300:]}"
    )


REPO = Path(__file__).resolve().parents[2]


def env_check_works(tmpdir: str) -> None:
    """The next ``env check`` of a benign env, as a new process with this TMPDIR, admits it."""
    done = subprocess.run(
        [sys.executable, "-m", "spade_async.cli", "env", "check", str(ENVS / "guess.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "TMPDIR": tmpdir, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and "ADMITTED" in done.stdout, done.stdout + done.stderr[-2000:]


def shm_tmpdir(tmp_path_factory: pytest.TempPathFactory, name: str) -> str:
    """A fresh TMPDIR on /dev/shm (tmpfs): folder-heavy attacks stay fast on a slow disk."""
    base = Path("/dev/shm") if os.path.isdir("/dev/shm") else tmp_path_factory.getbasetemp()
    path = tempfile.mkdtemp(prefix=f"spade-test-{name}-", dir=base)
    os.chmod(path, 0o711)  # like /tmp, children of other uids can traverse it to their workdir
    return path


_PRIVATE_TMPFS_PROBE = """
import ctypes, os, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
    sys.exit(1)
if libc.mount(None, b"/", None, 0x4000 | 0x40000, None) != 0:  # MS_REC | MS_PRIVATE
    sys.exit(2)
where = tempfile.mkdtemp()
ok = libc.mount(b"tmpfs", where.encode(), b"tmpfs", 0, b"size=1m") == 0
if ok:
    libc.umount2(where.encode(), 0)
os.rmdir(where)
sys.exit(0 if ok else 3)
"""


def host_allows_private_tmpfs() -> bool:
    """Whether this host lets a process mount a tmpfs in a private mount namespace, probed in a
    throwaway subprocess, apart from the sandbox. Where it does, the sandbox's disk budget layer
    must be present: its absence is a failure, not a reason to skip."""
    done = subprocess.run([sys.executable, "-c", _PRIVATE_TMPFS_PROBE], capture_output=True, timeout=30)
    return done.returncode == 0


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def processes_of_uid(uid: int) -> set[int]:
    """Live processes whose real uid is ``uid`` (what ``setpriority(PRIO_USER, uid)`` reaches)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as handle:
                    line = next(row for row in handle if row.startswith("Uid:"))
            except (OSError, StopIteration):
                continue
            if int(line.split()[1]) == uid:
                found.add(int(entry))
    return found


def session_members(sid: int) -> list[int]:
    """Live processes whose session id is ``sid`` (a child and anything it started)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                members.append(int(entry))
    return members


async def assert_serves(pool: SandboxPool) -> None:
    """The pool still hands out a working env (the property every hostile test ends with)."""
    async with await pool.open(benign()) as env:
        obs, _ = await env.reset(0)
        assert obs.startswith("Guess a number")
        result = await env.step("\\boxed{1}")
        assert isinstance(result.reward, float)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def pool(anyio_backend: str) -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(TEST_CFG) as started:
        yield started
