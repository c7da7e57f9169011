"""Hostile envs against the kernel surface (issue classes 5, 7, 8): SysV IPC and memfds that
outlive a child, scheduling/affinity/I/O priority and timestamps/xattrs of things outside the
child, and syscalls a name-based filter skipped. Positive controls run the same attack
unsandboxed; each test ends by the same pool serving a benign env."""

# ruff: noqa: ASYNC220, ASYNC240 - tests drive victims and files directly

from __future__ import annotations

import errno
import os
import platform
import re
import subprocess
from pathlib import Path

import pyseccomp as sc
import pytest

from spade_async.config import SandboxConfig
from spade_async.sandbox.child import seccomp
from spade_async.sandbox.forkserver import claim_uid_range
from spade_async.sandbox.isolation import from_probe
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import TEST_CFG, assert_serves, hostile, processes_of_uid, unsandboxed

pytestmark = pytest.mark.anyio


async def _attack(pool: SandboxPool, name: str, action: str) -> str:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        return (await env.step(action)).obs


# -- class 5: kernel objects that outlive a child ---------------------------------------------


async def test_sysv_ipc_and_memfd_are_denied(pool: SandboxPool) -> None:
    obs = await _attack(pool, "sysv_ipc", "")
    assert obs.startswith("DENIED"), obs
    control = unsandboxed("sysv_ipc", "")
    assert "shmget:OK" in control and "msgget:OK" in control and "memfd:OK" in control
    await assert_serves(pool)


# -- class 7: reaching other processes; what passes Landlock ----------------------------------


async def test_other_processes_cannot_be_rescheduled(pool: SandboxPool) -> None:
    async with await pool.open(hostile("other_process")) as env:
        await env.reset(0)
        uid = env._spawned.uid
        victim = subprocess.Popen(["sleep", "30"], user=uid)  # same uid as the env: only seccomp stops it
        try:
            # PRIO_USER reaches every process of a uid: name the uid only when this test created all of them
            mine = uid != os.getuid() and processes_of_uid(uid) <= {victim.pid, env.pid}
            action = f"{victim.pid} {uid}" if mine else str(victim.pid)
            before = os.sched_getaffinity(victim.pid), os.getpriority(os.PRIO_PROCESS, victim.pid)
            obs = (await env.step(action)).obs
            assert obs == "DONE ", obs
            assert (os.sched_getaffinity(victim.pid), os.getpriority(os.PRIO_PROCESS, victim.pid)) == before
            own = os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)
            control = unsandboxed("other_process", action)
            assert "affinity" in control and "nice" in control and "ioprio" in control, control
            assert ("nice_user" in control) == mine, control
            assert os.getpriority(os.PRIO_PROCESS, victim.pid) == 19  # the control reached the test's victim ...
            assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)) == own  # ... and not the test
        finally:
            victim.kill()
            victim.wait()
    await assert_serves(pool)


async def test_each_pool_gets_its_own_uid_range(pool: SandboxPool) -> None:
    if os.geteuid() != 0:
        pytest.skip("children run as the trainer's uid on a non-root host (seccomp covers this class there)")
    other_base, lock = claim_uid_range()  # positive control: a second claimant gets another range
    try:
        async with await SandboxPool.start(TEST_CFG) as second:
            async with (
                await pool.open(hostile("other_process")) as first_env,
                await second.open(hostile("other_process")) as second_env,
            ):
                first_uid, second_uid = first_env._spawned.uid, second_env._spawned.uid
                assert abs(first_uid - second_uid) >= 4096 and other_base not in (first_uid, second_uid)
                await first_env.reset(0)
                assert (await first_env.step(str(second_env.pid))).obs == "DONE "
    finally:
        lock.close()
    await assert_serves(pool)


async def test_timestamps_and_xattrs_outside(pool: SandboxPool, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    target = tmp_path / "outside.txt"
    target.write_text("x")
    target.chmod(0o666)
    os.setxattr(target, "user.secret", b"xattr-secret")
    os.utime(target, (1_000_000, 1_000_000))
    obs = await _attack(pool, "touch_xattr_outside", str(target))
    assert obs == f"utime:{errno.EPERM} xattr:{errno.EOPNOTSUPP} listxattr:{errno.EOPNOTSUPP}", obs
    assert target.stat().st_mtime == 1_000_000
    control = unsandboxed("touch_xattr_outside", str(target))
    assert "utime:DONE" in control and "xattr:xattr-secret" in control, control
    assert target.stat().st_mtime != 1_000_000
    await assert_serves(pool)


# -- class 8: the filter rots silently -----------------------------------------------------------


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the syscall numbers below are x86_64's")
async def test_syscalls_skipped_by_name_are_denied_by_number(pool: SandboxPool) -> None:
    obs = await _attack(pool, "raw_syscalls", "")
    got = dict(part.split("=") for part in obs.split())
    assert got == {
        "memfd_secret": str(errno.EPERM),
        "modify_ldt": str(errno.EPERM),
        "statmount": str(errno.ENOSYS),
        "listmount": str(errno.ENOSYS),
        "lsm_get_self_attr": str(errno.ENOSYS),
        "lsm_list_modules": str(errno.ENOSYS),
        "unreviewed_463": str(errno.ENOSYS),
    }, obs
    control = dict(part.split("=") for part in unsandboxed("raw_syscalls", "control").split())
    reached = [
        name
        for name in ("modify_ldt", "statmount", "listmount", "lsm_list_modules")
        if control[name] not in (str(errno.ENOSYS), str(errno.EPERM))
    ]
    assert reached, f"positive control: these calls reach this kernel unsandboxed ({control})"
    await assert_serves(pool)


def test_rule_table_matches_the_kernel_headers() -> None:
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if platform.machine() != "x86_64" or not header.exists():
        pytest.skip("needs the x86_64 kernel headers")
    known = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR_(\w+) (\d+)", header.read_text())}
    for name, number in seccomp.X86_64.items():
        if name in known:
            assert known[name] == number, name
    named = {
        *seccomp.DENIED,
        *seccomp.NOT_SUPPORTED,
        *seccomp.UNREVIEWED_NAMES,
        *seccomp.SELF_ONLY,
        "clone",
        "clone3",
        "prlimit64",
        "prctl",
        "fcntl",
    }
    assert named <= set(seccomp.X86_64), named - set(seccomp.X86_64)
    assert max(seccomp.X86_64.values()) <= seccomp.HIGHEST_REVIEWED


def test_a_rule_that_cannot_be_installed_refuses_the_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: sc.SyscallFilter, *args: object) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(sc.SyscallFilter, "add_rule", broken)
    with pytest.raises(seccomp.SeccompRuleError, match="could not be installed"):
        seccomp.build_filter(1234)
    if platform.machine() == "x86_64":
        monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv-unknown")
    with pytest.raises(seccomp.SeccompRuleError, match=r"cannot resolve|unknown"):
        seccomp.syscall_number("no_such_syscall")
    # the pool refuses to start and says why (the child reports the failed layer with its error)
    report = from_probe(
        {"process": True, "rlimits": True, "seccomp": False, "landlock": True, "uid": True},
        {"read_outside_denied": True, "write_outside_denied": True, "not_root": True},
        namespaces=True,
        notes={"seccomp": "seccomp rule for 'statmount' (#457) could not be installed: Invalid argument"},
    )
    assert not report.meets(SandboxConfig().min_isolation)
    assert "seccomp (" in report.explain("landlock") and "statmount" in report.explain("landlock")
