"""Hostile envs: reads of files outside the workdir (a planted secret, the run's SQLite file,
/proc/1/environ), symlink/hardlink escapes, writes and every chmod/chown variant outside.
Positive controls run the same attack unsandboxed."""

# ruff: noqa: ASYNC220, ASYNC240 - tests touch small local files and start victims directly

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import assert_serves, hostile, unsandboxed

pytestmark = pytest.mark.anyio
SECRET = "TOP-SECRET-7f3a"


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A world-readable secret in a world-traversable folder: only the sandbox can stop a read."""
    tmp_path.chmod(0o777)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    secret.chmod(0o666)
    return secret


async def _attack(pool: SandboxPool, name: str, action: str) -> str:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        return (await env.step(action)).obs


@pytest.mark.parametrize("name", ["read_file", "symlink_read", "hardlink_read"])
async def test_read_planted_secret(pool: SandboxPool, planted: Path, name: str) -> None:
    obs = await _attack(pool, name, str(planted))
    assert obs.startswith("DENIED") and SECRET not in obs
    assert SECRET in unsandboxed(name, str(planted))
    await assert_serves(pool)


async def test_read_run_database(pool: SandboxPool, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    db = tmp_path / "run.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE secrets (v TEXT)")
        conn.execute("INSERT INTO secrets VALUES (?)", (SECRET,))
    db.chmod(0o666)
    obs = await _attack(pool, "read_file", str(db))
    assert obs.startswith("DENIED") and "SQLite" not in obs
    assert unsandboxed("read_file", str(db)).startswith("READ SQLite format")
    await assert_serves(pool)


async def test_read_proc_environ(pool: SandboxPool) -> None:
    assert (await _attack(pool, "read_file", "/proc/1/environ")).startswith("DENIED")
    victim = subprocess.Popen(["sleep", "30"], env={"VICTIM_SECRET": SECRET})
    try:
        target = f"/proc/{victim.pid}/environ"
        obs = await _attack(pool, "read_file", target)
        assert obs.startswith("DENIED") and SECRET not in obs
        assert SECRET in unsandboxed("read_file", target)
    finally:
        victim.kill()
        victim.wait()
    await assert_serves(pool)


async def test_write_outside(pool: SandboxPool, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    target = tmp_path / "pwned.txt"
    assert (await _attack(pool, "write_file", str(target))).startswith("DENIED")
    assert not target.exists()
    assert unsandboxed("write_file", str(target)) == "WROTE" and target.read_text() == "pwned"
    await assert_serves(pool)


async def test_unlink_rename_mkdir_truncate_utime_outside(pool: SandboxPool, planted: Path) -> None:
    before = planted.stat()
    obs = await _attack(pool, "mutate_outside", str(planted))
    assert "DONE" not in obs, obs
    after = planted.stat()
    assert planted.read_text() == SECRET and after.st_mtime == before.st_mtime
    assert not Path(str(planted) + ".dir").exists()
    assert "unlink:DONE" in unsandboxed("mutate_outside", str(planted))
    await assert_serves(pool)


async def test_every_chmod_chown_variant(pool: SandboxPool, planted: Path) -> None:
    before = planted.stat()
    obs = await _attack(pool, "chmod_chown", str(planted))
    assert obs == "DONE ", f"variants that were not denied: {obs}"
    after = planted.stat()
    assert (stat.S_IMODE(after.st_mode), after.st_uid, after.st_gid) == (
        stat.S_IMODE(before.st_mode),
        before.st_uid,
        before.st_gid,
    )
    control = unsandboxed("chmod_chown", str(planted))
    assert "chmod_outside" in control and "fchmodat2_outside" in control
    assert stat.S_IMODE(os.stat(planted).st_mode) == 0o777
    await assert_serves(pool)
