"""Async pool of sandboxed env children: the API the rest of the trainer uses.

Why this shape: one fresh child per env instance (spawned by the zygote in a few ms) bounds
state leakage, CPU accounting and memory creep; every call runs under ``anyio.fail_after``;
any anomaly (timeout, EOF, malformed or forged reply, an exception in env code) kills the
child by pidfd and process group and the env is never used again. At most
``max_children`` children live at once; ``open`` waits for a slot.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import msgspec

from spade_async.config import SandboxConfig
from spade_async.sandbox.channel import ChannelClosed, LineChannel, ReplyTooLarge
from spade_async.sandbox.errors import (
    EnvCrashed,
    EnvProtocolError,
    EnvTimeout,
    IsolationTooLow,
    SandboxError,
)
from spade_async.sandbox.forkserver import ForkServer, Spawned
from spade_async.sandbox.isolation import ALL_LAYERS, IsolationReport, from_probe
from spade_async.sandbox.protocol import ChildSpec, Reply, Request, decode_reply, encode

__all__ = [
    "EnvCrashed", "EnvProtocolError", "EnvTimeout", "IsolationReport", "IsolationTooLow",
    "SandboxError", "SandboxPool", "SandboxedEnv", "StepResult",
]

KILL_WAIT_S = 5.0
"""Most seconds to wait for a SIGKILLed child to be gone."""
EXIT_MEANINGS = {121: "the child could not enforce a required isolation layer", 122: "protocol violation"}


@dataclass(frozen=True)
class StepResult:
    obs: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)
    output: str = ""


def describe_status(status: int | None) -> str:
    """A wait status in words: 'killed by SIGSEGV', 'exit status 3'."""
    if status is None:
        return "exit status unknown"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        extra = {"SIGXCPU": " (CPU time limit)", "SIGSEGV": " (segfault, e.g. C-level recursion)",
                 "SIGXFSZ": " (file size limit)", "SIGKILL": ""}.get(name, "")
        return f"killed by {name}{extra}"
    code = os.WEXITSTATUS(status)
    return f"exit status {code}" + (f" ({EXIT_MEANINGS[code]})" if code in EXIT_MEANINGS else "")


class SandboxedEnv:
    """One env instance in its own locked-down child process."""

    def __init__(self, pool: SandboxPool, spawned: Spawned) -> None:
        self._pool = pool
        self._spawned = spawned
        self._channel = LineChannel(spawned.sock)
        self._next_id = 0
        self._dead: str | None = None
        self._closed = False
        self.pid = spawned.pid
        self.workdir = spawned.workdir
        self.class_name = ""
        self.has_solution = False
        self.imports: tuple[str, ...] = ()
        self.load_output = ""
        self.exit_status: int | None = None

    async def __aenter__(self) -> SandboxedEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _load(self, source: str) -> None:
        reply = await self._call("load", self._pool.cfg.spawn_timeout_s, source=source)
        self.class_name = reply.class_name
        self.has_solution = reply.has_solution
        self.imports = tuple(reply.imports)
        self.load_output = reply.output

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        reply = await self._call("reset", self._pool.cfg.call_timeout_s, seed=seed)
        return reply.obs, reply.info

    async def step(self, action: str) -> StepResult:
        reply = await self._call("step", self._pool.cfg.call_timeout_s, action=str(action))
        if not math.isfinite(reply.reward):
            await self._fail(f"non-finite reward {reply.reward!r}")
            raise EnvProtocolError(f"step() returned a non-finite reward {reply.reward!r}")
        return StepResult(reply.obs, reply.reward, reply.terminated, reply.truncated, reply.info, reply.output)

    async def solution(self) -> list[str] | None:
        reply = await self._call("solution", self._pool.cfg.call_timeout_s)
        return reply.actions

    async def probe(self, canary: str) -> Reply:
        """Run the isolation canary (trusted code) in this child; used once at pool start."""
        return await self._call("probe", self._pool.cfg.spawn_timeout_s, canary=canary)

    async def _call(self, op: str, limit_s: float, **fields: Any) -> Reply:
        if self._dead is not None:
            raise EnvCrashed(f"env is unusable after an earlier failure: {self._dead}")
        self._next_id += 1
        data = encode(Request(id=self._next_id, op=op, **fields)) + b"\n"
        try:
            with anyio.fail_after(limit_s):
                await self._channel.send(data)
                line = await self._channel.receive_line(self._pool.cfg.max_reply_bytes)
            reply = decode_reply(line)
        except TimeoutError:
            await self._fail("timeout")
            raise EnvTimeout(f"{op}() did not answer within {limit_s:g} s; the env process was killed") from None
        except ChannelClosed:
            status = await self._fail("died")
            raise EnvCrashed(f"env process died during {op}(): {describe_status(status)}") from None
        except ReplyTooLarge:
            await self._fail("reply too large")
            raise EnvProtocolError(f"{op}() reply exceeds {self._pool.cfg.max_reply_bytes} bytes") from None
        except msgspec.MsgspecError as exc:
            await self._fail("malformed reply")
            raise EnvProtocolError(f"{op}(): malformed reply from the env process ({exc})") from None
        except BaseException:  # cancelled from outside: the stream state is unknown
            await self._fail("cancelled")
            raise
        if reply.id != self._next_id:
            await self._fail("forged reply")
            raise EnvProtocolError(f"{op}(): reply id {reply.id} does not match request {self._next_id} (forged reply?)")
        if not reply.ok:
            await self._fail(reply.error)
            kind = EnvCrashed if reply.kind == "env_error" else EnvProtocolError
            raise kind(f"{op}(): {reply.error}", output=reply.output)
        return reply

    def _kill_now(self) -> None:
        try:
            signal.pidfd_send_signal(self._spawned.pidfd, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass
        try:  # the leader is not reaped yet (only our reap request reaps it), so its pgid cannot be reused
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def _fail(self, reason: str) -> int | None:
        """Mark the env unusable and tear the child down; returns its wait status."""
        if self._dead is None:
            self._dead = reason
        return await self._terminate()

    async def _terminate(self) -> int | None:
        if self._closed:
            return self.exit_status
        self._closed = True
        with anyio.CancelScope(shield=True):
            self._kill_now()
            with anyio.move_on_after(KILL_WAIT_S):
                await anyio.wait_readable(self._spawned.pidfd)
            os.close(self._spawned.pidfd)
            self._channel.close()
            try:
                self.exit_status = await self._pool._server_reap(self.pid)
            finally:
                self._pool._release(self)
        return self.exit_status

    async def aclose(self) -> None:
        """Kill the child and delete its workdir; idempotent."""
        if self._dead is None:
            self._dead = "closed"
        await self._terminate()


BASE_PREFIX = "spade-sandbox-"


def _sweep_stale_base_dirs() -> None:
    """Delete folders left by trainers that were killed (their pid is in the folder name)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        owner = name[len(BASE_PREFIX):].split("-", 1)[0]
        if not name.startswith(BASE_PREFIX) or not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except PermissionError:
            continue


def _make_base_dir() -> str:
    """The pool's private folder: traversable by child uids, holding the probe's canary file."""
    _sweep_stale_base_dirs()
    base = tempfile.mkdtemp(prefix=f"{BASE_PREFIX}{os.getpid()}-")
    os.chmod(base, 0o711)  # children (other uids) must traverse to their own workdir
    canary = os.path.join(base, "canary.txt")
    with open(canary, "w") as handle:
        handle.write("canary: a child must not be able to read this\n")
    os.chmod(canary, 0o644)  # readable by mode: only the sandbox may stop the probe's read
    return base


class SandboxPool:
    """Zygote + probe + a bound on live children. Start with ``await SandboxPool.start(cfg)``."""

    def __init__(self, cfg: SandboxConfig, server: ForkServer, base: str, disable: frozenset[str]) -> None:
        self.cfg = cfg
        self._server = server
        self._base = base
        self._slots = anyio.Semaphore(cfg.max_children)
        self._live: set[SandboxedEnv] = set()
        self._layers = tuple(name for name in ("rlimits", "uid", "landlock", "seccomp") if name not in disable)
        self._require: tuple[str, ...] = ()
        self.isolation = IsolationReport(layers=dict.fromkeys(ALL_LAYERS, False))
        self.canary = os.path.join(base, "canary.txt")

    @classmethod
    async def start(cls, cfg: SandboxConfig, *, disable: frozenset[str] = frozenset(),
                    namespaces: bool = True) -> SandboxPool:
        """Start the zygote and probe the host; raises IsolationTooLow below ``cfg.min_isolation``.

        ``disable`` switches layers off (tests, benchmarks); ``namespaces`` tries ``unshare``.
        """
        base = _make_base_dir()
        try:
            server = await ForkServer.start(base, namespaces=namespaces and "namespaces" not in disable)
        except BaseException:
            shutil.rmtree(base, ignore_errors=True)
            raise
        pool = cls(cfg, server, base, disable)
        try:
            pool.isolation = await pool._probe()
            if not pool.isolation.meets(cfg.min_isolation):
                raise IsolationTooLow(pool.isolation.explain(cfg.min_isolation))
        except BaseException:
            await pool.aclose()
            raise
        pool._require = tuple(n for n in pool._layers if pool.isolation.layers.get(n))
        return pool

    async def _probe(self) -> IsolationReport:
        env = await self._spawn()
        try:
            reply = await env.probe(self.canary)
        except SandboxError:
            return IsolationReport(layers=dict.fromkeys(ALL_LAYERS, False))
        finally:
            await env.aclose()
        own_netns = os.readlink("/proc/self/ns/net")
        checks = {k: bool(v) for k, v in reply.info.items()}
        return from_probe(reply.layers, checks, namespaces=bool(self._server.netns) and self._server.netns != own_netns)

    def _spec(self) -> ChildSpec:
        cfg = self.cfg
        return ChildSpec(memory_mib=cfg.memory_mib, cpu_seconds=cfg.cpu_seconds, max_reply_bytes=cfg.max_reply_bytes,
                         layers=self._layers, require=self._require)

    async def _spawn(self) -> SandboxedEnv:
        await self._slots.acquire()
        try:
            spawned = await self._server.spawn(self._spec(), self.cfg.spawn_timeout_s)
        except BaseException:
            self._slots.release()
            raise
        env = SandboxedEnv(self, spawned)
        self._live.add(env)
        return env

    async def open(self, source: str) -> SandboxedEnv:
        """A fresh child running ``source``'s env class; waits for a free slot."""
        if not isinstance(source, str):
            raise SandboxError(f"env source must be a str, got {type(source).__name__}")
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > self.cfg.max_source_bytes:
            raise SandboxError(f"env source is {size} bytes, above the {self.cfg.max_source_bytes}-byte limit")
        env = await self._spawn()
        try:
            await env._load(source)
        except BaseException:
            await env.aclose()
            raise
        return env

    async def _server_reap(self, pid: int) -> int | None:
        if not self._server.alive:
            return None
        try:
            return await self._server.reap(pid, self.cfg.spawn_timeout_s)
        except SandboxError:
            return None

    def _release(self, env: SandboxedEnv) -> None:
        if env in self._live:
            self._live.discard(env)
            self._slots.release()

    @property
    def live(self) -> int:
        """Children alive now."""
        return len(self._live)

    async def aclose(self) -> None:
        """Kill every child, stop the zygote, delete the sandbox directory."""
        with anyio.CancelScope(shield=True):
            for env in list(self._live):
                await env.aclose()
            await self._server.aclose()
        shutil.rmtree(self._base, ignore_errors=True)

    async def __aenter__(self) -> SandboxPool:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
