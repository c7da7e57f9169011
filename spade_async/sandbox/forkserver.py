"""Controller side of the zygote: start it by exec with a scrubbed environment, ask it for
children, reap them.

Why exec and a scrubbed environment: the trainer may hold CUDA state, threads and secrets
(``HF_TOKEN``, database URLs); a fork of it would carry all of that into env children. The
zygote is started with only PATH/LANG, in its own session (a terminal Ctrl-C does not reach
it), and dies with the trainer (PR_SET_PDEATHSIG, armed inside the zygote). When root, it
enters fresh PID/mount/network/IPC/UTS namespaces itself (see zygote.py).

Why a uid range per fork-server: children of two pools (a training run and an ``env check``
beside it) must never share a uid, or one's env could signal or re-prioritise the other's.
Each server claims a range with an abstract-socket lock that the kernel releases when the
process dies, so a crashed trainer never leaks its range.

Why pids are read back from the pidfd: inside its PID namespace the zygote sees other pid
numbers than the trainer; ``/proc/self/fdinfo`` of the pidfd gives the trainer's view.
"""

from __future__ import annotations

import array
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process

from spade_async.sandbox.errors import SandboxError
from spade_async.sandbox.protocol import (
    MAX_CONTROL_BYTES,
    ChildSpec,
    ZygoteReply,
    ZygoteRequest,
    decode_zygote_reply,
    encode,
)

ZYGOTE_START_TIMEOUT_S = 30.0
"""Interpreter start plus pre-imports; generous because a loaded CI box can take seconds."""
UID_BASE = 620_000
UID_RANGE = 4096
UID_RANGES = 256
"""Children of range r run as UID_BASE + r * UID_RANGE + slot (root only)."""


@dataclass
class Spawned:
    """A child just forked by the zygote: its pid, the controller's socket end and a pidfd."""

    pid: int
    """The child's pid as the trainer sees it."""
    zpid: int
    """The child's pid as the zygote sees it (reap requests)."""
    uid: int
    workdir: str
    sock: socket.socket
    pidfd: int
    workdir_fd: int | None
    """An fd on the child's capped tmpfs workdir (disk budget checks), when it has one."""
    server: ForkServer


def pid_of_pidfd(pidfd: int) -> int:
    """The pid a pidfd refers to, in this process's PID namespace (-1 once it has exited)."""
    with open(f"/proc/self/fdinfo/{pidfd}") as handle:
        for row in handle:
            if row.startswith("Pid:"):
                return int(row.split()[1])
    raise SandboxError("this kernel does not report pids of pidfds (Linux >= 5.6 needed)")


def claim_uid_range() -> tuple[int, socket.socket]:
    """A uid range no other live fork-server holds, and the lock that holds it."""
    for index in range(UID_RANGES):
        lock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            lock.bind(f"\0spade-sandbox-uids-{index}")
        except OSError:
            lock.close()
            continue
        return UID_BASE + index * UID_RANGE, lock
    raise SandboxError(f"all {UID_RANGES} sandbox uid ranges are in use by other trainers on this host")


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _scrubbed_env() -> dict[str, str]:
    return {
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        "PYTHONPATH": _package_root(),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }


def _log_tail(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")[-2000:]
    except OSError:
        return ""


class ForkServer:
    """One running zygote and the control socket to it; spawn/reap calls are serialised."""

    def __init__(
        self, process: Process, control: socket.socket, netns: str, base: str, uid_lock: socket.socket | None
    ) -> None:
        self.process = process
        self.control = control
        self.netns = netns
        self.base = base
        self.uid_lock = uid_lock
        self.lock = anyio.Lock()
        self.alive = True
        self.disk_quota = False

    @classmethod
    async def start(cls, base: str, *, namespaces: bool) -> ForkServer:
        """Exec the zygote and wait until it is ready (it enters namespaces itself when asked and able)."""
        uid_base, uid_lock = claim_uid_range() if os.geteuid() == 0 else (os.geteuid(), None)
        try:
            return await cls._start(base, uid_base, uid_lock, namespaces)
        except BaseException:
            if uid_lock is not None:
                uid_lock.close()
            raise

    @classmethod
    async def _start(cls, base: str, uid_base: int, uid_lock: socket.socket | None, namespaces: bool) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log_path = os.path.join(base, "zygote.log")
        cmd = [
            sys.executable,
            "-s",
            "-m",
            "spade_async.sandbox.child.zygote",
            str(theirs.fileno()),
            str(os.getpid()),
            base,
            str(uid_base),
            "1" if namespaces else "0",
        ]
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            process = await anyio.open_process(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_fd,
                cwd=base,
                env=_scrubbed_env(),
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            os.close(log_fd)
            theirs.close()
        ours.setblocking(False)
        server = cls(process, ours, "", base, uid_lock)
        try:
            with anyio.fail_after(ZYGOTE_START_TIMEOUT_S):
                reply, _ = await server._receive()
        except (TimeoutError, SandboxError, OSError) as exc:
            await server.aclose()
            tail = _log_tail(log_path)
            raise SandboxError(f"the sandbox fork-server did not start ({exc!r}); its log:\n{tail}") from None
        server.netns = reply.netns
        server.disk_quota = reply.disk_quota
        return server

    async def _receive(self) -> tuple[ZygoteReply, list[int]]:
        space = socket.CMSG_SPACE(4 * array.array("i").itemsize)
        while True:
            try:
                data, ancillary, _, _ = self.control.recvmsg(MAX_CONTROL_BYTES, space)
                break
            except BlockingIOError:
                await anyio.wait_readable(self.control)
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
        if not data:
            self.alive = False
            raise SandboxError("the sandbox fork-server exited")
        return decode_zygote_reply(data), fds

    async def request(self, req: ZygoteRequest, limit_s: float) -> tuple[ZygoteReply, list[int]]:
        """One exchange with the zygote; on timeout or EOF the zygote is declared dead."""
        if not self.alive:
            raise SandboxError("the sandbox fork-server is not running")
        async with self.lock:
            try:
                with anyio.fail_after(limit_s):
                    await anyio.wait_writable(self.control)
                    self.control.send(encode(req))
                    return await self._receive()
            except (TimeoutError, OSError) as exc:
                self.alive = False
                raise SandboxError(f"the sandbox fork-server stopped answering ({exc!r})") from None

    async def spawn(self, spec: ChildSpec, limit_s: float, warm: int = 0) -> Spawned:
        """A child hardened per ``spec``; the zygote then forks until ``warm`` children wait ready."""
        reply, fds = await self.request(ZygoteRequest(op="spawn", spec=spec, warm=warm), limit_s)
        if not reply.ok or len(fds) != 2 + reply.disk_quota:
            for fd in fds:
                os.close(fd)
            raise SandboxError(f"the fork-server could not spawn a child: {reply.error or 'no fds'}")
        sock = socket.socket(fileno=fds[0])
        try:
            pid = pid_of_pidfd(fds[1])
        except (OSError, ValueError, SandboxError):
            pid = -1
        # pid -1: it already died; it is still handed out and its first call reports how it ended
        return Spawned(
            pid=pid,
            zpid=reply.pid,
            uid=reply.uid,
            workdir=reply.workdir,
            sock=sock,
            pidfd=fds[1],
            workdir_fd=fds[2] if reply.disk_quota else None,
            server=self,
        )

    async def reap(self, pid: int, limit_s: float) -> int | None:
        """Wait status of a dead child (the zygote also deletes its workdir)."""
        reply, _ = await self.request(ZygoteRequest(op="reap", pid=pid), limit_s)
        return reply.status

    async def aclose(self, *, kill: bool = False) -> None:
        """Close the control socket (the zygote exits, its children die with it) and wait.

        ``kill``: SIGKILL it at once (it stopped answering, so it will not notice the close).
        """
        self.alive = False
        self.control.close()
        if kill and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        with anyio.move_on_after(2.0, shield=True):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            with anyio.move_on_after(2.0, shield=True):
                await self.process.wait()
        if self.uid_lock is not None:
            self.uid_lock.close()
