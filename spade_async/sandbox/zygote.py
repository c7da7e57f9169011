"""The fork-server ("zygote"): a clean, exec'd interpreter that hands out locked-down children.

Why a zygote: a cold interpreter costs ~300 ms, a fork of a warm one a few ms. It is started
by exec (never forked from the trainer, which may hold CUDA state and secrets) with a scrubbed
environment, pre-imports every module an env may use (after the uid drop the interpreter's own
files may be unreadable, see docs/sandbox.md), and never runs generated code itself:
it only forks, passes the child's socket and a pidfd to the controller, and reaps.

Run as ``python -m spade_async.sandbox.zygote CONTROL_FD TRAINER_PID BASE_DIR``.
"""

from __future__ import annotations

import array
import ctypes
import gc
import os
import shutil
import signal
import socket
import sys
import tempfile

import msgspec

from spade_async.sandbox import harden, seccomp, worker
from spade_async.sandbox.protocol import (
    MAX_CONTROL_BYTES,
    ChildSpec,
    ZygoteReply,
    decode_zygote_request,
    encode,
)

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
UID_BASE = 620_000
"""Children run as UID_BASE + slot (one uid per live child) when the zygote is root."""
UID_SLOTS = 4096


def _preload() -> None:
    """Import everything a child may need; nothing may be loaded from disk after the fork."""
    import importlib

    from spade_async.envs.contract import ALLOWED_IMPORTS

    for name in [*sorted(ALLOWED_IMPORTS), "_strptime", "encodings.idna", "encodings.latin_1", "encodings.ascii",
                                          "encodings.utf_16", "encodings.utf_32", "unicodedata", "traceback",
                                          "linecache", "ast", "importlib", "resource", "threading"]:
        importlib.import_module(name)
    try:
        seccomp.prepare()
    except Exception:
        pass  # no libseccomp here: children report the seccomp layer missing


class Zygote:
    def __init__(self, control: socket.socket, base: str) -> None:
        self.control = control
        self.base = base
        self.children: dict[int, tuple[int, str]] = {}  # pid -> (uid slot, workdir)
        self.netns = _netns()
        self.zygote_pid = os.getpid()

    def _free_slot(self) -> int:
        used = {slot for slot, _ in self.children.values()}
        return next(s for s in range(UID_SLOTS) if s not in used)

    def spawn(self, spec: ChildSpec) -> tuple[ZygoteReply, list[int]]:
        slot = self._free_slot()
        uid = UID_BASE + slot if os.geteuid() == 0 else os.geteuid()
        workdir = tempfile.mkdtemp(prefix="env-", dir=self.base)
        if os.geteuid() == 0:
            os.chown(workdir, uid, uid)
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        spec = msgspec.structs.replace(spec, uid=uid, workdir=workdir)
        pid = os.fork()
        if pid == 0:
            self._child(spec, child_end)
        child_end.close()
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (slot, workdir)
        return ZygoteReply(ok=True, pid=pid, uid=uid, workdir=workdir, netns=self.netns), [parent_end.detach(), pidfd]

    def _child(self, spec: ChildSpec, sock: socket.socket) -> None:
        """Runs in the forked child: harden, then serve. Never returns."""
        code = harden.EXIT_HARDEN_FAILED
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            layers = harden.harden(spec, sock.fileno(), self.zygote_pid)
            code = 0
            worker.serve(sock, spec, layers)
        finally:
            os._exit(code)

    def reap(self, pid: int) -> ZygoteReply:
        if pid not in self.children:
            return ZygoteReply(ok=False, error=f"unknown child {pid}")
        _, workdir = self.children.pop(pid)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = None
        shutil.rmtree(workdir, ignore_errors=True)
        return ZygoteReply(ok=True, pid=pid, status=status)

    def sweep(self) -> None:
        """Reap dead processes that are not our direct, still-tracked children (adopted orphans)."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid in self.children:
                return
            os.waitpid(info.si_pid, 0)

    def serve(self) -> None:
        self.control.sendall(encode(ZygoteReply(ok=True, pid=self.zygote_pid, netns=self.netns)))
        while True:
            data = self.control.recv(MAX_CONTROL_BYTES)
            if not data:
                return
            self.sweep()
            fds: list[int] = []
            reply: ZygoteReply
            try:
                req = decode_zygote_request(data)
                if req.op == "spawn" and req.spec is not None:
                    reply, fds = self.spawn(req.spec)
                elif req.op == "reap":
                    reply = self.reap(req.pid)
                else:
                    reply = ZygoteReply(ok=False, error=f"bad request {req.op!r}")
            except Exception as exc:
                reply = ZygoteReply(ok=False, error=f"{type(exc).__name__}: {exc}")
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
            self.control.sendmsg([encode(reply)], ancillary)
            for fd in fds:
                os.close(fd)


def _netns() -> str:
    try:
        return os.readlink("/proc/self/ns/net")
    except OSError:
        return ""


def main(argv: list[str]) -> int:
    control_fd, trainer_pid, base = int(argv[1]), int(argv[2]), argv[3]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != trainer_pid:
        return 1  # the trainer died before we armed the parent-death signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    _preload()
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    control = socket.socket(fileno=control_fd)
    zygote = Zygote(control, base)
    gc.collect()
    gc.freeze()
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
