"""Lock down a freshly forked env child before it sees any generated code.

Why this order (docs/sandbox.md): session and parent-death signal first (nothing may outlive
the zygote), then fd and environment hygiene (no inherited secrets or channels), rlimits
(still allowed to lower them), the lowest CPU and I/O priority (an env that burns CPU between
calls only gets what the trainer leaves idle) and ``oom_score_adj`` 1000 (under memory
pressure the kernel kills env children before the trainer), the uid drop (needs root, chown was done by the zygote), the
parent-death signal again (a credential change clears it), Landlock, and seccomp last
(it denies the setrlimit/setuid calls the earlier steps need). Each layer reports whether it
is in force; a layer listed in ``require`` that fails aborts the child.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

from spade_async.sandbox.child import landlock, seccomp
from spade_async.sandbox.protocol import ChildSpec

PR_SET_PDEATHSIG = 1
EXIT_HARDEN_FAILED = 121
"""Exit status of a child that could not enforce a required layer."""

_libc = ctypes.CDLL(None, use_errno=True)


class HardenError(Exception):
    """A required isolation layer could not be put in force."""


def _set_pdeathsig(zygote_pid: int) -> None:
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != zygote_pid:
        os._exit(EXIT_HARDEN_FAILED)  # the zygote is gone: die before doing anything


def _hygiene(keep_fd: int, workdir: str) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 1 << 16)
    os.environ.clear()
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"})
    os.chdir(workdir)


def _rlimits(spec: ChildSpec) -> bool:
    mib = 1 << 20
    limits = {
        resource.RLIMIT_AS: spec.memory_mib * mib,
        resource.RLIMIT_CPU: spec.cpu_seconds,
        resource.RLIMIT_FSIZE: spec.fsize_mib * mib,
        resource.RLIMIT_NOFILE: spec.nofile,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NPROC: spec.nproc,
    }
    for kind, value in limits.items():
        hard = value + 1 if kind == resource.RLIMIT_CPU else value  # SIGXCPU first, then SIGKILL
        resource.setrlimit(kind, (value, hard))
    return True


IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_IDLE = 3
SYS_IOPRIO_SET = 251


OOM_SCORE_ADJ = 1000
"""The OOM killer's first choice: without it a child has the trainer's score (0) and the kernel
kills the largest process, usually the trainer, when the children's memory exceeds the host's."""


def _lowest_priority() -> bool:
    """nice 19, the idle I/O class and the highest ``oom_score_adj`` for this process (later
    denied to change by seccomp and, for ``/proc/self/oom_score_adj``, by Landlock). Done
    before the uid drop: lowering the score needs a privilege, raising it does not."""
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    if os.uname().machine == "x86_64":
        _libc.syscall(SYS_IOPRIO_SET, IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << 13)
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"%d" % OOM_SCORE_ADJ)
        finally:
            os.close(fd)
    except OSError:
        pass  # no /proc: the priority layer still holds; docs/sandbox.md lists what remains
    return os.getpriority(os.PRIO_PROCESS, 0) == 19


def _drop_uid(uid: int) -> bool:
    if os.geteuid() != 0:
        return True  # already unprivileged: the layer holds without a drop
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    return os.geteuid() == uid


def _read_only_paths() -> list[str]:
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        "/usr",
        "/lib",
        "/lib64",
        "/lib32",
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/dev/urandom",
        "/dev/zero",
    }
    paths.update(p for p in sys.path if p and os.path.isabs(p) and "site-packages" in p)
    return sorted(paths)


def harden(spec: ChildSpec, sock_fd: int, zygote_pid: int) -> tuple[dict[str, bool], dict[str, str]]:
    """Apply every layer not disabled in ``spec``; returns the layers in force and, for each
    layer that failed, why (shown by the pool when it refuses to start)."""
    os.setsid()
    _set_pdeathsig(zygote_pid)
    _hygiene(sock_fd, spec.workdir)
    layers = {"process": True, "disk_quota": spec.disk_quota}
    notes: dict[str, str] = {}
    wanted = set(spec.layers)

    def attempt(name: str, action: object) -> None:
        ok = False
        if name in wanted:
            try:
                ok = bool(action())  # type: ignore[operator]
            except Exception as exc:
                ok = False
                notes[name] = str(exc) or type(exc).__name__
        layers[name] = ok
        if not ok and name in spec.require:
            raise HardenError(name)

    attempt("rlimits", lambda: _rlimits(spec))
    attempt("priority", _lowest_priority)
    attempt("uid", lambda: _drop_uid(spec.uid))
    _set_pdeathsig(zygote_pid)
    if "landlock" in wanted:
        try:
            got = landlock.restrict(_read_only_paths(), [spec.workdir, os.devnull])
        except OSError as exc:
            got = {"landlock": False, "landlock_net": False, "landlock_scope": False}
            notes["landlock"] = str(exc)
        layers.update(got)
    else:
        layers.update({"landlock": False, "landlock_net": False, "landlock_scope": False})
    if not layers["landlock"] and "landlock" in spec.require:
        raise HardenError("landlock")
    attempt("seccomp", lambda: seccomp.apply_filter(os.getpid()))
    return layers, notes
