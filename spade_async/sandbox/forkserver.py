"""Controller side of the zygote: start it by exec with a scrubbed environment, ask it for
children, reap them.

Why exec and a scrubbed environment: the trainer may hold CUDA state, threads and secrets
(``HF_TOKEN``, database URLs); a fork of it would carry all of that into env children. The
zygote is started with only PATH/LANG, in its own session (a terminal Ctrl-C does not reach
it), and dies with the trainer (PR_SET_PDEATHSIG, armed inside the zygote). Optionally it
runs in fresh network/IPC namespaces (``unshare``) when the host allows it.
"""

from __future__ import annotations

import array
import os
import shutil
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


@dataclass
class Spawned:
    """A child just forked by the zygote: its pid, the controller's socket end and a pidfd."""

    pid: int
    uid: int
    workdir: str
    sock: socket.socket
    pidfd: int


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _scrubbed_env() -> dict[str, str]:
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONPATH": _package_root(), "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _log_tail(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")[-2000:]
    except OSError:
        return ""


class ForkServer:
    """One running zygote and the control socket to it; spawn/reap calls are serialised."""

    def __init__(self, process: Process, control: socket.socket, netns: str, base: str) -> None:
        self.process = process
        self.control = control
        self.netns = netns
        self.base = base
        self.lock = anyio.Lock()
        self.alive = True

    @classmethod
    async def start(cls, base: str, *, namespaces: bool) -> ForkServer:
        """Exec the zygote (under ``unshare`` when ``namespaces`` and possible) and wait until it is ready."""
        if namespaces and os.geteuid() == 0 and shutil.which("unshare"):
            try:
                return await cls._start(base, ["unshare", "--net", "--ipc", "--uts", "--"])
            except SandboxError:
                pass  # namespaces are an optional layer: fall back to a plain zygote
        return await cls._start(base, [])

    @classmethod
    async def _start(cls, base: str, prefix: list[str]) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log_path = os.path.join(base, "zygote.log")
        cmd = [*prefix, sys.executable, "-s", "-m", "spade_async.sandbox.zygote",
               str(theirs.fileno()), str(os.getpid()), base]
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            process = await anyio.open_process(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_fd, cwd=base,
                env=_scrubbed_env(), pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        finally:
            os.close(log_fd)
            theirs.close()
        ours.setblocking(False)
        server = cls(process, ours, "", base)
        try:
            with anyio.fail_after(ZYGOTE_START_TIMEOUT_S):
                reply, _ = await server._receive()
        except (TimeoutError, SandboxError, OSError) as exc:
            await server.aclose()
            tail = _log_tail(log_path)
            raise SandboxError(f"the sandbox fork-server did not start ({exc!r}); its log:\n{tail}") from None
        server.netns = reply.netns
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

    async def spawn(self, spec: ChildSpec, limit_s: float) -> Spawned:
        reply, fds = await self.request(ZygoteRequest(op="spawn", spec=spec), limit_s)
        if not reply.ok or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise SandboxError(f"the fork-server could not spawn a child: {reply.error or 'no fds'}")
        sock = socket.socket(fileno=fds[0])
        return Spawned(pid=reply.pid, uid=reply.uid, workdir=reply.workdir, sock=sock, pidfd=fds[1])

    async def reap(self, pid: int, limit_s: float) -> int | None:
        """Wait status of a dead child (the zygote also deletes its workdir)."""
        reply, _ = await self.request(ZygoteRequest(op="reap", pid=pid), limit_s)
        return reply.status

    async def aclose(self) -> None:
        """Close the control socket (the zygote exits, its children die with it) and wait."""
        self.alive = False
        self.control.close()
        with anyio.move_on_after(2.0, shield=True):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            with anyio.move_on_after(2.0, shield=True):
                await self.process.wait()
