"""The driver's side of remote sandbox pools: the same interface as the local pool.

Why this shape: the orchestrator, the validators and the agents call ``pool.open(source)``,
``pool.inspect(source)`` and, on an env, ``reset``/``step``/``solution``/``aclose``;
:class:`RemoteSandboxPool` answers exactly those, so nothing upstream changes. An env is
opened on the pool with the fewest open envs and every later call of it goes to that pool
(one episode stays on one node). Errors come back as data and are raised here as the local
pool's own exception classes.

Why a lost pool costs only its in-flight work: when an actor dies (its node, its process,
``ray.kill``), every call to it fails with a Ray actor error, which is raised here as
:class:`EnvCrashed`, exactly what a crashed local env raises, so the episode is counted as a
sandbox error; the pool is marked lost, an event says so, and later envs open on the pools
that remain. With none left, opening raises :class:`SandboxError`.

Why restarts are polled, not awaited by a task of ours: with ``cluster.restart_lost_pools``
a lost pool gets a replacement actor, up to ``cluster.max_pool_restarts`` per run. Ray places
and starts it in the background by itself (the start call is an object ref); the driver only
looks, without blocking, whether it has answered (:meth:`RemoteSandboxPool.poll`, run before
every open and by the run's per-step status). So no task of ours outlives a call, Ctrl-C has
nothing to cancel, and ``aclose`` kills a replacement still starting like any other actor.
A replacement that refuses (its node below ``sandbox.min_isolation``), dies, or is not placed
within ``cluster.start_timeout_s`` is killed and the pool stays lost, with the reason.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio

from spade_async.cluster.errors import ClusterError
from spade_async.cluster.session import connect, end_actors, kill_actor
from spade_async.config import ClusterConfig, SandboxConfig
from spade_async.sandbox.errors import (
    EnvCrashed,
    EnvProtocolError,
    EnvTimeout,
    IsolationTooLow,
    SandboxError,
)
from spade_async.sandbox.isolation import LEVELS, IsolationReport
from spade_async.sandbox.pool import StepResult, check_source

log = logging.getLogger(__name__)

ERRORS: dict[str, type[SandboxError]] = {
    cls.__name__: cls for cls in (SandboxError, EnvCrashed, EnvProtocolError, EnvTimeout, IsolationTooLow)
}
SLACK_S = 60.0
"""Seconds a remote call may take beyond the sandbox's own limit before its pool counts as lost
(a node that stopped answering; the local limits already bound the env itself)."""
ACTOR_CONCURRENCY = 1000
"""Calls an actor serves at once (each env call is a short await on the node's own pool)."""
WAIT_POLL_S = 0.2
"""How often ``open`` looks for a replacement while every pool is lost and one is starting."""


@dataclass
class Member:
    """One remote pool as the driver sees it."""

    index: int
    actor: Any
    node: str = "?"
    pid: int = 0
    open: int = 0
    lost: str | None = None

    @property
    def name(self) -> str:
        return f"remote sandbox pool {self.index} (node {self.node}, pid {self.pid})"


@dataclass
class Pending:
    """A replacement actor for the lost pool at ``index``, being placed and started by Ray."""

    index: int
    lost: Member
    actor: Any
    started: concurrent.futures.Future[dict[str, Any]]
    since: float


def _raise(outcome: dict[str, Any]) -> Any:
    if outcome["ok"]:
        return outcome["value"]
    raise ERRORS.get(outcome["kind"], SandboxError)(outcome["message"], output=outcome.get("output", ""))


def _weakest(reports: list[dict[str, Any]]) -> IsolationReport:
    """The isolation of the whole run: the weakest node's report (so the record never overstates it)."""
    weakest = min(reports, key=lambda r: LEVELS.index(r["level"]))
    return IsolationReport(layers=dict(weakest["layers"]), checks=dict(weakest["checks"]), notes=dict(weakest["notes"]))


class RemoteEnv:
    """One env instance living in a child of a remote pool."""

    def __init__(self, pool: RemoteSandboxPool, member: Member, opened: dict[str, Any]) -> None:
        self._pool = pool
        self._member = member
        self._id: int = opened["id"]
        self.class_name: str = opened["class_name"]
        self.has_solution: bool = opened["has_solution"]
        self.load_output: str = opened["load_output"]
        self.pid = -1  # lives on another node
        self._closed = False

    async def __aenter__(self) -> RemoteEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _call(self, method: str, limit_s: float, *args: Any) -> Any:
        if self._closed:
            raise EnvCrashed(f"{method}(): env is unusable after an earlier failure")
        try:
            outcome = await self._pool._call(self._member, method, limit_s, self._id, *args)
        except BaseException:
            await self.aclose()
            raise
        if not outcome["ok"]:
            self._release()  # the remote env is gone already
        return _raise(outcome)

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = await self._call("reset", self._pool.cfg.call_timeout_s, seed)
        return obs, info

    async def step(self, action: str) -> StepResult:
        r = await self._call("step", self._pool.cfg.call_timeout_s, str(action))
        return StepResult(r["obs"], r["reward"], r["terminated"], r["truncated"], r["info"], r["output"])

    async def solution(self) -> list[str] | None:
        result: list[str] | None = await self._call("solution", self._pool.cfg.call_timeout_s)
        return result

    def _release(self) -> None:
        if not self._closed:
            self._closed = True
            self._member.open -= 1

    async def aclose(self) -> None:
        """Kill the remote child (fire and forget when its pool is gone); idempotent."""
        if self._closed:
            return
        self._release()
        if self._member.lost is None:
            self._member.actor.close.remote(self._id)  # not awaited: the node's pool does the killing


class RemoteSandboxPool:
    """Remote pools behind the local pool's interface. Start with ``await RemoteSandboxPool.start(...)``."""

    def __init__(
        self,
        cfg: SandboxConfig,
        cluster: ClusterConfig,
        members: list[Member],
        owns_ray: bool,
        *,
        actor_class: Any = None,
        disable: frozenset[str] = frozenset(),
    ) -> None:
        self.cfg = cfg
        self.cluster = cluster
        self.members = members
        """One per configured pool; a restarted pool's replacement takes its place (same index)."""
        self._owns_ray = owns_ray
        self._actor_class = actor_class
        """The ``ray.remote`` class with the start's options (replacements get the same)."""
        self._disable = disable
        self._pending: list[Pending] = []
        self._closing = False
        self._reports: list[dict[str, Any]] = []
        self.events: list[str] = []
        """Pools lost, restarted or not restarted during the run (and why), in order."""
        self.restarts = 0
        """Replacement actors started so far (at most ``cluster.max_pool_restarts``)."""
        self.isolation = IsolationReport(layers={})
        self.warnings: list[str] = []
        """What the remote pools warned about at start (e.g. a node's memory budget), per node."""

    @classmethod
    async def start(
        cls, sandbox: SandboxConfig, cluster: ClusterConfig, *, disable: frozenset[str] = frozenset()
    ) -> RemoteSandboxPool:
        """Place ``cluster.sandbox_pools`` actors (spread over the nodes) and start each pool.

        Raises IsolationTooLow naming the node when any pool refuses, ClusterError when the
        cluster cannot host them in ``cluster.start_timeout_s``; either way no actor is left.
        """
        owns = connect(cluster)
        import ray

        from spade_async.cluster.actor import PoolActor

        remote = ray.remote(PoolActor).options(
            num_cpus=cluster.pool_cpus, scheduling_strategy="SPREAD", max_concurrency=ACTOR_CONCURRENCY, max_restarts=0
        )
        members = [Member(i, remote.remote()) for i in range(cluster.sandbox_pools)]
        pool = cls(sandbox, cluster, members, owns, actor_class=remote, disable=disable)
        try:
            refs = [m.actor.start.remote(sandbox.model_dump(), sorted(disable)) for m in members]
            with anyio.move_on_after(cluster.start_timeout_s) as scope:
                outcomes = [await ref for ref in refs]
            if scope.cancelled_caught:
                raise ClusterError(
                    f"the Ray cluster did not start {cluster.sandbox_pools} sandbox pool(s) of "
                    f"{cluster.pool_cpus:g} CPU each within {cluster.start_timeout_s:g} s; "
                    "lower cluster.sandbox_pools or cluster.pool_cpus, or add nodes"
                )
            for member, outcome in zip(members, outcomes, strict=True):
                member.node, member.pid = outcome["node"], outcome["pid"]
                if not outcome["ok"]:
                    raise ERRORS.get(outcome["kind"], SandboxError)(f"on node {member.node}: {outcome['message']}")
            pool._reports = [o["value"] for o in outcomes]
            pool.isolation = _weakest(pool._reports)
            pool.warnings = [f"node {o['node']}: {w}" for o in outcomes for w in o.get("warnings", [])]
        except BaseException:
            await pool.aclose()
            raise
        return pool

    fleet_name = "pools"

    def fleet_size(self) -> tuple[int, int]:
        """(pools serving, pools started), after taking in replacements that answered."""
        self.poll()
        return self.live_pools, len(self.members)

    @property
    def live_pools(self) -> int:
        """Remote pools still serving."""
        return sum(m.lost is None for m in self.members)

    @property
    def live(self) -> int:
        """Envs open now (over every pool)."""
        return sum(m.open for m in self.members if m.lost is None)

    def _note(self, event: str) -> None:
        self.events.append(event)
        log.warning("cluster: %s", event)

    def _lose(self, member: Member, why: str) -> None:
        if member.lost is not None:
            return
        member.lost = why
        self._note(f"{member.name} lost ({why}); {self.live_pools} of {len(self.members)} left")
        kill_actor(member.actor)  # an actor that stopped answering may still hold children: end it for sure
        self._restart(member)

    def _restart(self, lost: Member) -> None:
        """Ask Ray for a replacement of ``lost``; it is placed and started in the background."""
        cc = self.cluster
        if not cc.restart_lost_pools or self._closing or self._actor_class is None:
            return
        if self.restarts >= cc.max_pool_restarts:
            self._note(f"{lost.name} not restarted: cluster.max_pool_restarts = {cc.max_pool_restarts} reached")
            return
        self.restarts += 1
        actor = self._actor_class.remote()
        ref = actor.start.remote(self.cfg.model_dump(), sorted(self._disable))
        self._pending.append(Pending(lost.index, lost, actor, ref.future(), time.monotonic()))

    @property
    def restarting(self) -> int:
        """Replacements asked for that have not answered yet."""
        return len(self._pending)

    def poll(self) -> None:
        """Take in the replacements that answered; give up on refused, dead or unplaced ones.
        Never blocks."""
        for p in list(self._pending):
            if not p.started.done():
                if time.monotonic() - p.since > self.cluster.start_timeout_s:
                    self._pending.remove(p)
                    kill_actor(p.actor)
                    self._refused(
                        p,
                        f"its replacement was not placed within cluster.start_timeout_s = "
                        f"{self.cluster.start_timeout_s:g} s",
                    )
                continue
            self._pending.remove(p)
            try:
                outcome = p.started.result()
            except Exception as exc:  # the replacement died before it answered
                kill_actor(p.actor)
                self._refused(p, f"its replacement failed ({type(exc).__name__})")
                continue
            if not outcome["ok"]:
                kill_actor(p.actor)
                self._refused(p, f"on node {outcome['node']}: {outcome['message']}")
                continue
            new = Member(p.index, p.actor, outcome["node"], outcome["pid"])
            self.members[p.index] = new
            self._reports.append(outcome["value"])
            self.isolation = _weakest(self._reports)  # the record never overstates the run's isolation
            self.warnings += [f"node {new.node}: {w}" for w in outcome.get("warnings", [])]
            self._note(
                f"{p.lost.name} restarted as {new.name} (restart {self.restarts} of at most "
                f"{self.cluster.max_pool_restarts}); {self.live_pools} of {len(self.members)} live"
            )

    def _refused(self, p: Pending, why: str) -> None:
        p.lost.lost = f"{p.lost.lost}; not restarted: {why}"
        self._note(f"{p.lost.name} not restarted: {why}")

    async def _call(self, member: Member, method: str, limit_s: float, *args: Any) -> dict[str, Any]:
        """One remote call; a lost actor (or one silent past the limit) raises EnvCrashed."""
        import ray.exceptions

        if member.lost is not None:
            raise EnvCrashed(f"{method}(): {member.name} was lost earlier ({member.lost})")
        try:
            with anyio.fail_after(limit_s + SLACK_S):
                outcome: dict[str, Any] = await getattr(member.actor, method).remote(*args)
        except TimeoutError:
            self._lose(member, f"no answer within {limit_s + SLACK_S:g} s")
            raise EnvCrashed(f"{method}(): {member.name} stopped answering; its work is lost") from None
        except ray.exceptions.RayError as exc:
            self._lose(member, type(exc).__name__)
            raise EnvCrashed(f"{method}(): {member.name} was lost ({type(exc).__name__}); its work is lost") from None
        return outcome

    def _pick(self) -> Member:
        self.poll()
        live = [m for m in self.members if m.lost is None]
        if not live:
            raise SandboxError(f"every remote sandbox pool was lost ({'; '.join(self.events)})")
        return min(live, key=lambda m: m.open)

    def _check_source(self, source: str) -> None:
        check_source(source, self.cfg.max_source_bytes)

    async def open(self, source: str) -> RemoteEnv:
        """A fresh child running ``source``'s env class on the least busy remote pool."""
        self._check_source(source)
        member = await self._pick_waiting()
        member.open += 1
        try:
            outcome = await self._call(member, "open", self.cfg.spawn_timeout_s, source)
            opened = _raise(outcome)
        except BaseException:
            member.open -= 1
            raise
        return RemoteEnv(self, member, opened)

    async def inspect(self, source: str) -> dict[str, Any]:
        """Static facts about ``source``, from a child of a remote pool that only parses it."""
        self._check_source(source)
        member = await self._pick_waiting()
        result: dict[str, Any] = _raise(await self._call(member, "inspect", self.cfg.spawn_timeout_s, source))
        return result

    async def _pick_waiting(self) -> Member:
        """The least busy live pool; while every pool is lost and a replacement is starting,
        wait for it (bounded by ``cluster.start_timeout_s``, after which it is given up)."""
        self.poll()
        while self._pending and not any(m.lost is None for m in self.members):
            await anyio.sleep(WAIT_POLL_S)
            self.poll()
        return self._pick()

    async def aclose(self) -> None:
        """Stop every pool (its children, its fork-server), end the actors, leave the cluster
        when this run joined it."""
        self._closing = True  # no replacement is started from here on
        pending, self._pending = self._pending, []
        for p in pending:  # a replacement still starting: its fork-server dies with the actor
            kill_actor(p.actor)
        await end_actors(
            [m.actor for m in self.members if m.lost is None],
            [m.actor for m in self.members],
            self.cfg.spawn_timeout_s + 10,
            self._owns_ray,
        )

    async def __aenter__(self) -> RemoteSandboxPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
