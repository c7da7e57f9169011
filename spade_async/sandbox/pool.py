"""Async pool of sandboxed env children: the API the rest of the trainer uses.

Why this shape: one fresh child per env instance (spawned by the zygote in a few ms) bounds
state leakage, CPU accounting and memory creep; every call runs under ``anyio.fail_after``;
any anomaly (timeout, EOF, malformed or forged reply, an exception in env code) kills the
child by pidfd and process group and the env is never used again. At most
``max_children`` children live at once; ``open`` waits for a slot.

Why any exception is caught around a reply: whatever one env sends (a reply nested 1000
levels deep makes a JSON decoder recurse) must end that env only, never the run. Why the
decoded reply is bounded here (:mod:`spade_async.sandbox.bounds`) and rewards must lie in
[0, 1]: the child's own checks run under the env's control, and everything downstream (prompt
rendering, admission, the store) relies on data of bounded shape and on rewards that mean what
the contract says. Why CPU is
accounted between calls: an env that keeps a thread burning while the agent thinks only
shows up in the process CPU clock; past ``idle_cpu_s`` the env fails with that reason. Why a
restart: a fork-server that stopped answering is replaced (at most :data:`MAX_RESTARTS`
times, each recorded in ``events``) so one hostile env cannot end every later spawn.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import select
import signal
import tempfile
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import msgspec

from spade_async.config import SandboxConfig
from spade_async.sandbox.bounds import ReplyOutOfBounds, check_reply
from spade_async.sandbox.channel import ChannelClosed, LineChannel, ReplyTooLarge
from spade_async.sandbox.cleanup import remove_tree
from spade_async.sandbox.errors import (
    EnvCrashed,
    EnvProtocolError,
    EnvTimeout,
    IsolationTooLow,
    RewardOutOfRange,
    SandboxError,
)
from spade_async.sandbox.forkserver import ForkServer, Spawned
from spade_async.sandbox.hostmem import budget_warning, host_memory_bytes
from spade_async.sandbox.isolation import ALL_LAYERS, IsolationReport, from_probe
from spade_async.sandbox.protocol import (
    ChildSpec,
    Reply,
    Request,
    ZygoteRequest,
    decode_reply,
    encode,
)

__all__ = [
    "EnvCrashed",
    "EnvProtocolError",
    "EnvTimeout",
    "IsolationReport",
    "IsolationTooLow",
    "RewardOutOfRange",
    "SandboxError",
    "SandboxPool",
    "SandboxedEnv",
    "StepResult",
]

KILL_WAIT_S = 5.0
"""Most seconds to wait for a SIGKILLed child to be gone."""
MAX_RESTARTS = 3
"""Fork-server restarts allowed over a pool's life before spawns fail for good."""
CPUCLOCK_SCHED = 2
SAMPLE_GAP_S = 0.001
"""Idle CPU and the disk budget are checked after any pause longer than this between calls
(and after slow calls); back-to-back calls check the disk budget every BUDGET_EVERY calls,
which keeps the step round trip at its floor. Containment never depends on these checks."""
BUDGET_EVERY = 8
REWARD_RANGE = (0.0, 1.0)
"""Every step reward must lie here (the games and tool-use contracts); outside it the env fails."""
log = logging.getLogger(__name__)
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
        extra = {
            "SIGXCPU": " (CPU time limit)",
            "SIGSEGV": " (segfault, e.g. C-level recursion)",
            "SIGXFSZ": " (file size limit)",
            "SIGKILL": "",
        }.get(name, "")
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
        self.load_output = ""
        self.exit_status: int | None = None
        self.idle_cpu_s = 0.0
        self._replied_cpu: float | None = None
        self._replied_at = 0.0

    async def __aenter__(self) -> SandboxedEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _load(self, source: str) -> None:
        reply = await self._call("load", self._pool.cfg.spawn_timeout_s, source=source)
        self.class_name = reply.class_name
        self.has_solution = reply.has_solution
        self.load_output = reply.output

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        reply = await self._call("reset", self._pool.cfg.call_timeout_s, seed=seed)
        return reply.obs, reply.info

    async def step(self, action: str) -> StepResult:
        reply = await self._call("step", self._pool.cfg.call_timeout_s, action=str(action))
        if not math.isfinite(reply.reward):
            await self._fail(f"non-finite reward {reply.reward!r}")
            raise EnvProtocolError(f"step() returned a non-finite reward {reply.reward!r}")
        if not REWARD_RANGE[0] <= reply.reward <= REWARD_RANGE[1]:
            await self._fail(f"reward {reply.reward!r} out of range")
            raise RewardOutOfRange(
                f"step() returned reward {reply.reward!r}; rewards must lie in "
                f"[{REWARD_RANGE[0]:g}, {REWARD_RANGE[1]:g}] (an environment error, not a win)"
            )
        return StepResult(reply.obs, reply.reward, reply.terminated, reply.truncated, reply.info, reply.output)

    async def solution(self) -> list[str] | None:
        reply = await self._call("solution", self._pool.cfg.call_timeout_s)
        return reply.actions

    async def probe(self, canary: str) -> Reply:
        """Run the isolation canary (trusted code) in this child; used once at pool start."""
        return await self._call("probe", self._pool.cfg.spawn_timeout_s, canary=canary)

    def _cpu_s(self) -> float:
        """CPU seconds the child has used so far (its process CPU clock)."""
        if self.pid <= 0:
            return 0.0
        try:
            return time.clock_gettime(((~self.pid) << 3) | CPUCLOCK_SCHED)
        except OSError:
            return 0.0

    def _budget_overrun(self) -> str | None:
        """Why the child's workdir is full (its tmpfs byte or inode budget), or None."""
        fd = self._spawned.workdir_fd
        if fd is None:
            return None
        try:
            st = os.fstatvfs(fd)
        except OSError:
            return None
        cfg = self._pool.cfg
        if st.f_bfree == 0:
            return f"the env filled its workdir budget of {cfg.disk_mib} MiB"
        if st.f_ffree == 0:
            return f"the env used all {cfg.disk_inodes} files/folders of its workdir budget"
        return None

    async def _check_budget(self, op: str, output: str) -> None:
        overrun = self._budget_overrun()
        if overrun is not None:
            await self._fail(overrun)
            raise EnvCrashed(f"{op}(): {overrun}; files written in the workdir count against it", output=output)

    async def _call(self, op: str, limit_s: float, **fields: Any) -> Reply:
        if self._dead is not None:
            raise EnvCrashed(f"env is unusable after an earlier failure: {self._dead}")
        sent_at = time.perf_counter()
        if self._replied_cpu is not None and sent_at - self._replied_at > SAMPLE_GAP_S:
            self.idle_cpu_s += max(self._cpu_s() - self._replied_cpu, 0.0)
            if self.idle_cpu_s > self._pool.cfg.idle_cpu_s:
                await self._fail("CPU use between calls")
                raise EnvCrashed(
                    f"{op}(): the env used {self.idle_cpu_s:.2f} s of CPU between calls (limit "
                    f"{self._pool.cfg.idle_cpu_s:g} s); it must do nothing while waiting for an action"
                )
            await self._check_budget(op, "")
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
            overrun = self._budget_overrun()
            status = await self._fail(overrun or "died")
            if overrun:
                raise EnvCrashed(f"env process died during {op}(): {overrun} ({describe_status(status)})") from None
            raise EnvCrashed(f"env process died during {op}(): {describe_status(status)}") from None
        except ReplyTooLarge:
            await self._fail("reply too large")
            raise EnvProtocolError(f"{op}() reply exceeds {self._pool.cfg.max_reply_bytes} bytes") from None
        except msgspec.MsgspecError as exc:
            await self._fail("malformed reply")
            raise EnvProtocolError(f"{op}(): malformed reply from the env process ({exc})") from None
        except Exception as exc:  # anything else while decoding one env's reply (RecursionError ...)
            await self._fail("undecodable reply")
            raise EnvProtocolError(
                f"{op}(): the env process sent a reply that cannot be decoded ({type(exc).__name__})"
            ) from None
        except BaseException:  # cancelled from outside: the stream state is unknown
            await self._fail("cancelled")
            raise
        try:  # bounded on the decoded data: the child's own checks are under the env's control
            check_reply(reply)
        except ReplyOutOfBounds as exc:
            await self._fail("reply out of bounds")
            raise EnvProtocolError(f"{op}(): the env's reply is out of bounds: {exc}") from None
        self._replied_at = time.perf_counter()
        self._replied_cpu = self._cpu_s()
        if not reply.ok or self._replied_at - sent_at > SAMPLE_GAP_S or self._next_id % BUDGET_EVERY == 0:
            await self._check_budget(op, reply.output)
        if reply.id != self._next_id:
            await self._fail("forged reply")
            raise EnvProtocolError(
                f"{op}(): reply id {reply.id} does not match request {self._next_id} (forged reply?)"
            )
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
        if self.pid <= 0:
            return
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
            if self._spawned.workdir_fd is not None:
                os.close(self._spawned.workdir_fd)
            self._channel.close()
            try:
                self.exit_status = await self._pool._server_reap(self._spawned)
            finally:
                self._pool._release(self)
            await self._pool._refill()
        return self.exit_status

    async def aclose(self) -> None:
        """Kill the child and delete its workdir; idempotent."""
        if self._dead is None:
            self._dead = "closed"
        await self._terminate()


def _exited(pidfd: int) -> bool:
    """True once the process behind ``pidfd`` has exited (a pidfd turns readable)."""
    return bool(select.select([pidfd], [], [], 0)[0])


def _discard(spawned: Spawned) -> None:
    """Kill a warm child that will not be used; the zygote reaps it (it is its parent)."""
    try:
        signal.pidfd_send_signal(spawned.pidfd, signal.SIGKILL)
    except OSError:
        pass
    for fd in (spawned.pidfd, spawned.workdir_fd):
        if fd is not None:
            os.close(fd)
    spawned.sock.close()


BASE_PREFIX = "spade-sandbox-"


OWNER_LOCK = ".owner.lock"
"""A file in each pool's folder that its trainer holds an exclusive ``flock`` on while it lives.

Why a lock and not the pid in the folder's name: a pid says nothing across PID namespaces (a
trainer in a container or under ``unshare --pid`` sees every other trainer's pid as free) and
pids are reused. The kernel drops the lock when its holder dies, kill -9 included."""
_owner_locks: dict[str, int] = {}
"""Base folder -> the descriptor holding its owner lock (closed when the pool deletes it)."""


def _owner_is_gone(folder: str, owner: str) -> bool:
    """True when nobody holds ``folder``'s owner lock (or, for a folder from before the lock,
    when its pid does not exist)."""
    try:
        fd = os.open(os.path.join(folder, OWNER_LOCK), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not os.path.exists(folder):
            return False
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its trainer is alive, whatever its pid looks like from here
    finally:
        os.close(fd)
    return True


def check_source(source: str, max_bytes: int) -> None:
    """Refuse env source that is not text or is over ``sandbox.max_source_bytes`` (before any
    child is spent on it; the remote pools apply the same rule on the driver)."""
    if not isinstance(source, str):
        raise SandboxError(f"env source must be a str, got {type(source).__name__}")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise SandboxError(f"env source is {size} bytes, above the {max_bytes}-byte limit")


def _sweep_stale_base_dirs() -> None:
    """Delete folders left by trainers that were killed (nobody holds their owner lock)."""
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        owner = name[len(BASE_PREFIX) :].split("-", 1)[0]
        if not name.startswith(BASE_PREFIX) or not owner.isdigit():
            continue
        folder = os.path.join(root, name)
        if folder in _owner_locks or not _owner_is_gone(folder, owner):
            continue
        left = remove_tree(folder)
        if left:
            log.warning("could not delete %d entries of the stale sandbox folder %s", left, name)


def _release_base_dir(base: str) -> int:
    """Delete the pool's folder and drop its owner lock; the count of entries left behind."""
    left = remove_tree(base)
    fd = _owner_locks.pop(base, None)
    if fd is not None:
        os.close(fd)
    return left


def _make_base_dir() -> str:
    """The pool's private folder: traversable by child uids, holding the probe's canary file."""
    _sweep_stale_base_dirs()
    base = tempfile.mkdtemp(prefix=f"{BASE_PREFIX}{os.getpid()}-")
    lock = os.open(os.path.join(base, OWNER_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh file: nobody else can hold it
    _owner_locks[base] = lock
    os.chmod(base, 0o711)  # children (other uids) must traverse to their own workdir
    canary = os.path.join(base, "canary.txt")
    with open(canary, "w") as handle:
        handle.write("canary: a child must not be able to read this\n")
    os.chmod(canary, 0o644)  # readable by mode: only the sandbox may stop the probe's read
    return base


class SandboxPool:
    """Zygote + probe + a bound on live children. Start with ``await SandboxPool.start(cfg)``."""

    def __init__(
        self, cfg: SandboxConfig, server: ForkServer, base: str, disable: frozenset[str], namespaces: bool
    ) -> None:
        self.cfg = cfg
        self._server = server
        self._base = base
        self._namespaces = namespaces
        self._slots = anyio.Semaphore(cfg.max_children)
        self._live: set[SandboxedEnv] = set()
        self._warm: list[Spawned] = []
        """Children forked and hardened ahead of need, already handed to us by the zygote."""
        self._unreaped: list[Spawned] = []
        self._layers = tuple(
            name for name in ("rlimits", "priority", "uid", "landlock", "seccomp") if name not in disable
        )
        self._require: tuple[str, ...] = ()
        self._restart_lock = anyio.Lock()
        self.restarts = 0
        self.events: list[str] = []
        """Things that went wrong in the sandbox machinery itself (fork-server restarts)."""
        self.isolation = IsolationReport(layers=dict.fromkeys(ALL_LAYERS, False))
        self.canary = os.path.join(base, "canary.txt")
        self.warnings: list[str] = []
        """What the start-up checks found worth saying (the memory budget against the host's)."""

    @classmethod
    async def start(
        cls, cfg: SandboxConfig, *, disable: frozenset[str] = frozenset(), namespaces: bool = True
    ) -> SandboxPool:
        """Start the zygote and probe the host; raises IsolationTooLow below ``cfg.min_isolation``.

        ``disable`` switches layers off (tests, benchmarks); ``namespaces`` lets the zygote
        enter PID/mount/network namespaces where the host allows it.
        """
        base = _make_base_dir()
        namespaces = namespaces and "namespaces" not in disable
        try:
            server = await ForkServer.start(base, namespaces=namespaces)
        except BaseException:
            _release_base_dir(base)
            raise
        pool = cls(cfg, server, base, disable, namespaces)
        warning = budget_warning(cfg.max_children, cfg.memory_mib, host_memory_bytes())
        if warning:
            log.warning("%s", warning)
            pool.warnings.append(warning)
        try:
            pool.isolation = await pool._probe()
            if not pool.isolation.meets(cfg.min_isolation):
                raise IsolationTooLow(pool.isolation.explain(cfg.min_isolation))
            pool._require = tuple(n for n in pool._layers if pool.isolation.layers.get(n))
            if cfg.warm_children:
                await server.request(
                    ZygoteRequest(op="warm", spec=pool._spec(), warm=cfg.warm_children), cfg.spawn_timeout_s
                )
                await pool._refill()
        except BaseException:
            await pool.aclose()
            raise
        return pool

    async def _probe(self) -> IsolationReport:
        env = await self._spawn(warm=0)
        try:
            reply = await env.probe(self.canary)
        except SandboxError as exc:
            return IsolationReport(layers=dict.fromkeys(ALL_LAYERS, False), notes={"process": str(exc)})
        finally:
            await env.aclose()
        own_netns = os.readlink("/proc/self/ns/net")
        checks = {k: bool(v) for k, v in reply.info.items()}
        return from_probe(
            reply.layers,
            checks,
            namespaces=bool(self._server.netns) and self._server.netns != own_netns,
            notes=reply.notes,
        )

    def _spec(self) -> ChildSpec:
        cfg = self.cfg
        return ChildSpec(
            memory_mib=cfg.memory_mib,
            cpu_seconds=cfg.cpu_seconds,
            max_reply_bytes=cfg.max_reply_bytes,
            layers=self._layers,
            require=self._require,
            disk_mib=cfg.disk_mib,
            disk_inodes=cfg.disk_inodes,
        )

    async def _live_server(self) -> ForkServer:
        """The running fork-server; a dead one is replaced (bounded, recorded in ``events``)."""
        if self._server.alive:
            return self._server
        async with self._restart_lock:
            if self._server.alive:
                return self._server
            if self.restarts >= MAX_RESTARTS:
                raise SandboxError(
                    f"the sandbox fork-server died {self.restarts + 1} times; not restarting it again "
                    "(see zygote.log in the sandbox folder)"
                )
            await self._server.aclose(kill=True)
            self.restarts += 1
            event = f"fork-server restarted ({self.restarts}/{MAX_RESTARTS}) after it stopped answering"
            self.events.append(event)
            log.warning("sandbox: %s", event)
            self._server = await ForkServer.start(self._base, namespaces=self._namespaces)
            return self._server

    async def _spawn(self, warm: int | None = None) -> SandboxedEnv:
        await self._slots.acquire()
        try:
            spawned = self._take_warm() if warm is None else None
            if spawned is None:
                server = await self._live_server()
                spawned = await server.spawn(
                    self._spec(), self.cfg.spawn_timeout_s, self.cfg.warm_children if warm is None else warm
                )
        except BaseException:
            self._slots.release()
            raise
        env = SandboxedEnv(self, spawned)
        self._live.add(env)
        return env

    def _take_warm(self) -> Spawned | None:
        """A held warm child of the running fork-server that has not died meanwhile."""
        while self._warm:
            spawned = self._warm.pop(0)
            if spawned.server is self._server and spawned.server.alive and not _exited(spawned.pidfd):
                return spawned
            _discard(spawned)
            self._unreaped.append(spawned)
        return None

    async def _refill(self) -> None:
        """Top the held warm children up to ``warm_children`` (called off the open path: start, close)."""
        try:
            while self._unreaped:
                spawned = self._unreaped.pop()
                await self._server_reap(spawned)
            while len(self._warm) < self.cfg.warm_children and self._server.alive:
                self._warm.append(
                    await self._server.spawn(self._spec(), self.cfg.spawn_timeout_s, self.cfg.warm_children)
                )
        except SandboxError as exc:
            log.warning("sandbox: could not fork a warm child: %s", exc)

    async def open(self, source: str) -> SandboxedEnv:
        """A fresh child running ``source``'s env class; waits for a free slot."""
        self._check_source(source)
        env = await self._spawn()
        try:
            await env._load(source)
        except BaseException:
            await env.aclose()
            raise
        return env

    async def inspect(self, source: str) -> dict[str, Any]:
        """Static facts about ``source`` (imports, classes, syntax, module-level UPPER_CASE strings such as
        ``HINT``) from a child that only parses it.

        The child never compiles or runs the source, so a candidate cannot forge these facts.
        """
        self._check_source(source)
        async with await self._spawn() as env:
            reply = await env._call("inspect", self.cfg.spawn_timeout_s, source=source)
        return dict(reply.static)

    def _check_source(self, source: str) -> None:
        check_source(source, self.cfg.max_source_bytes)

    async def _server_reap(self, spawned: Spawned) -> int | None:
        server = spawned.server
        if not server.alive:
            return None
        try:
            return await server.reap(spawned.zpid, self.cfg.spawn_timeout_s)
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
            while self._warm:
                _discard(self._warm.pop())
            await self._server.aclose()
        left = _release_base_dir(self._base)
        if left:
            log.warning("sandbox: %d entries of %s could not be deleted", left, self._base)

    async def __aenter__(self) -> SandboxPool:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
