"""The driver's side of remote engine replicas: one :class:`Engine` over several Ray actors.

Why this shape: the orchestrator, the designer and the agents call ``generate``,
``load_adapter`` and the tokenizer methods of one engine; :class:`RemoteEngine` answers
exactly those, so nothing upstream changes. Tokenizing and chat rendering happen here, with
the model's tokenizer (the same helpers the local engines use); the weights load only on the
replicas.

Routing: a request with an ``affinity`` key (the environment id: one episode's turns, one
group's plays) goes to the live replica with the highest rendezvous weight for that key, so
it keeps hitting one replica's prefix cache and losing a replica moves only that replica's
keys. A request without a key goes to the least busy replica. One call with mixed keys is
split per replica and reassembled in order.

Adapters travel by content: the folder's files are read once, put once in Ray's object
store, and every live replica loads them from a private folder on its node (or, with
``cluster.adapters = "shared_path"``, reads the path itself). Each replica answers the version
it serves; one that fails to load a version is stale, so it is killed and counted lost
before it could serve a request with the old weights. Every completion carries the version
of the replica that produced it.

Faults: generation is stateless, so the requests of a replica that dies (a Ray actor error)
or stays silent past ``cluster.engine_timeout_s`` are retried on the replicas that remain
(counted in ``retries``); the replica is marked lost with an event. With none left, the call
raises :class:`ClusterError`.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from spade_async.cluster.engine_actor import request_to_dict
from spade_async.cluster.errors import ClusterError
from spade_async.cluster.session import connect, end_actors, kill_actor
from spade_async.config import Config
from spade_async.engine.base import Completion, GenerationRequest
from spade_async.engine.tokens import TokenizerHelpers

log = logging.getLogger(__name__)

ACTOR_CONCURRENCY = 1000
"""Calls a replica serves at once (its engine batches concurrent requests itself)."""
SHUTDOWN_S = 30.0
"""Seconds the replicas get to release their engines before their actors are killed."""
KNOWN_ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError}
"""Errors a replica reports about a request (not about itself), raised here as themselves."""


class ReplicaLost(Exception):
    """A replica died or stopped answering during a call (its work is to be retried)."""


@dataclass
class Replica:
    """One remote engine replica as the driver sees it."""

    index: int
    actor: Any
    node: str = "?"
    pid: int = 0
    device: str = "?"
    busy: int = 0
    """Requests in flight on it."""
    lost: str | None = None

    @property
    def name(self) -> str:
        return f"engine replica {self.index} (node {self.node}, pid {self.pid}, {self.device})"


def rendezvous_weight(key: str, index: int) -> int:
    """Highest-random-weight score of replica ``index`` for ``key`` (stable across processes)."""
    return int.from_bytes(hashlib.blake2b(f"{key}\0{index}".encode(), digest_size=8).digest(), "big")


def read_adapter(path: str) -> dict[str, bytes]:
    """Every file of the adapter folder ``path`` by relative name."""
    root = Path(path)
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    if not files:
        raise ClusterError(f"adapter folder {path} is missing or empty; nothing to send to the engine replicas")
    return files


def replica_config(cfg: Config) -> dict[str, Any]:
    """The config a replica builds its engine from: on the CPU when it reserves no GPU."""
    data = cfg.model_dump(mode="json")
    if not cfg.cluster.engine_gpus:
        data["run"]["device"] = "cpu"
    return data


class RemoteEngine(TokenizerHelpers):
    """Engine replicas behind the Engine protocol. Start with ``await RemoteEngine.start(...)``."""

    def __init__(self, cfg: Config, tokenizer: Any, members: list[Replica], owns_ray: bool) -> None:
        self.cfg = cfg
        self.cluster = cfg.cluster
        self.tokenizer = tokenizer
        self.members = members
        self._owns_ray = owns_ray
        self.adapter_version = 0
        self.max_model_len = cfg.engine.max_model_len
        """Longest prompt + completion a replica accepts; callers fit prompts to it."""
        self.events: list[str] = []
        """Replicas lost during the run (and why)."""
        self.retries = 0
        """Requests sent again to another replica after theirs was lost."""
        self.generated_tokens = 0
        self._adapter_lock = anyio.Lock()
        self._closed = False

    @classmethod
    async def start(cls, cfg: Config, model_path: str, *, replica_model: str | None = None) -> RemoteEngine:
        """Place ``cluster.engine_replicas`` actors (spread over the nodes) and build each engine.

        ``model_path`` is the model folder on this machine (its tokenizer is loaded here);
        each replica resolves ``replica_model`` (default ``model.name``) on its own node.
        Raises ClusterError when a replica cannot start or the cluster cannot place them in
        ``cluster.start_timeout_s``; either way no actor is left.
        """
        from transformers import AutoTokenizer

        cc = cfg.cluster
        owns = connect(cc)
        import ray

        from spade_async.cluster.engine_actor import EngineActor

        options: dict[str, Any] = {
            "num_cpus": cc.engine_cpus,
            "scheduling_strategy": "SPREAD",
            "max_concurrency": ACTOR_CONCURRENCY,
            "max_restarts": 0,
        }
        if cc.engine_gpus:
            options["num_gpus"] = cc.engine_gpus
        remote = ray.remote(EngineActor).options(**options)
        members = [Replica(i, remote.remote()) for i in range(cc.engine_replicas)]
        engine = cls(cfg, None, members, owns)
        try:
            refs = [m.actor.start.remote(replica_config(cfg), replica_model or cfg.model.name) for m in members]
            engine.tokenizer = await anyio.to_thread.run_sync(
                lambda: AutoTokenizer.from_pretrained(model_path, trust_remote_code=cfg.model.trust_remote_code)
            )
            with anyio.move_on_after(cc.start_timeout_s) as scope:
                try:
                    outcomes = [await ref for ref in refs]
                except ray.exceptions.RayError as exc:  # a replica died while loading (its node, memory)
                    raise ClusterError(
                        f"an engine replica died while starting ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''})"
                    ) from None
            if scope.cancelled_caught:
                gpus = f" and {cc.engine_gpus:g} GPU" if cc.engine_gpus else ""
                raise ClusterError(
                    f"the Ray cluster did not start {cc.engine_replicas} engine replica(s) of "
                    f"{cc.engine_cpus:g} CPU{gpus} each within {cc.start_timeout_s:g} s; lower "
                    "cluster.engine_replicas or their resources, raise cluster.start_timeout_s, or add nodes"
                )
            for member, outcome in zip(members, outcomes, strict=True):
                member.node, member.pid = outcome["node"], outcome["pid"]
                if not outcome["ok"]:
                    raise ClusterError(
                        f"engine replica {member.index} on node {member.node} ({outcome['host']}) did "
                        f"not start: {outcome['kind']}: {outcome['message']}"
                    )
                member.device = outcome["value"]["device"]
        except BaseException:
            await engine.aclose()
            raise
        return engine

    # -- what the TUI and the tests read ---------------------------------------------
    fleet_name = "replicas"

    def fleet_size(self) -> tuple[int, int]:
        """(replicas serving, replicas started): the run's cluster metrics."""
        return self.live_replicas, self.replicas

    @property
    def replicas(self) -> int:
        """Engine replicas the run started with."""
        return len(self.members)

    @property
    def live_replicas(self) -> int:
        """Engine replicas still serving."""
        return sum(m.lost is None for m in self.members)

    async def info(self) -> list[dict[str, Any]]:
        """What each live replica reports about itself (version served, requests served)."""
        out = []
        for member in self.members:
            if member.lost is None:
                with anyio.move_on_after(self.cluster.engine_timeout_s):
                    out.append({"index": member.index, **await member.actor.info.remote()})
        return out

    # -- faults ------------------------------------------------------------------------
    def _lose(self, member: Replica, why: str) -> None:
        if member.lost is not None:
            return
        member.lost = why
        event = f"{member.name} lost ({why}); {self.live_replicas} of {len(self.members)} left"
        self.events.append(event)
        log.warning("cluster: %s", event)
        kill_actor(member.actor)  # a replica that stopped answering, or serves stale weights, must end for sure

    async def _call(self, member: Replica, method: str, *args: Any) -> dict[str, Any]:
        """One remote call; a lost actor (or one silent past the bound) raises ReplicaLost."""
        import ray.exceptions

        if member.lost is not None:
            raise ReplicaLost(member.lost)
        limit = self.cluster.engine_timeout_s
        try:
            with anyio.fail_after(limit):
                outcome: dict[str, Any] = await getattr(member.actor, method).remote(*args)
        except TimeoutError:
            self._lose(member, f"no answer within {limit:g} s")
            raise ReplicaLost(member.lost) from None
        except ray.exceptions.RayError as exc:
            self._lose(member, type(exc).__name__)
            raise ReplicaLost(member.lost) from None
        return outcome

    # -- routing -----------------------------------------------------------------------
    def _live(self) -> list[Replica]:
        live = [m for m in self.members if m.lost is None]
        if not live:
            raise ClusterError(f"every engine replica was lost ({'; '.join(self.events)})")
        return live

    def replica_for(self, affinity: str) -> Replica:
        """The live replica that serves requests with this affinity key."""
        return max(self._live(), key=lambda m: rendezvous_weight(affinity, m.index))

    def _route(self, requests: list[GenerationRequest], indices: list[int]) -> dict[int, list[int]]:
        """Member index -> indices of the requests it gets (keyed ones by rendezvous, the rest
        to the least busy, counting what this call already gave it)."""
        live = self._live()
        load = {m.index: m.busy for m in live}
        plan: dict[int, list[int]] = {}
        for i in indices:
            key = requests[i].affinity
            if key is not None:
                member = self.replica_for(key)
            else:
                member = min(live, key=lambda m: load[m.index])
            load[member.index] += 1
            plan.setdefault(member.index, []).append(i)
        return plan

    # -- the Engine protocol -------------------------------------------------------------
    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        """Complete every request (order kept); a lost replica's requests go to the others."""
        results: list[Completion | None] = [None] * len(requests)
        errors: list[Exception] = []
        pending = list(range(len(requests)))
        while pending:
            failed: list[int] = []
            plan = self._route(requests, pending)  # outside the task group: its error is raised as itself
            async with anyio.create_task_group() as tg:
                for index, indices in plan.items():
                    tg.start_soon(self._run, self.members[index], requests, indices, results, failed, errors)
            if errors:
                raise errors[0]
            self.retries += len(failed)
            pending = sorted(failed)
        out = [c for c in results if c is not None]
        self.generated_tokens += sum(len(c.token_ids) for c in out)
        return out

    async def _run(
        self,
        member: Replica,
        requests: list[GenerationRequest],
        indices: list[int],
        results: list[Completion | None],
        failed: list[int],
        errors: list[Exception],
    ) -> None:
        """Send ``indices`` of ``requests`` to one replica; fill ``results``, or add them to
        ``failed`` when the replica is lost (an error about a request goes to ``errors``)."""
        member.busy += len(indices)
        try:
            outcome = await self._call(member, "generate", [request_to_dict(requests[i]) for i in indices])
        except ReplicaLost:
            failed.extend(indices)
            return
        finally:
            member.busy -= len(indices)
        if not outcome["ok"]:
            kind = KNOWN_ERRORS.get(outcome["kind"], RuntimeError)
            errors.append(kind(f"{member.name}: {outcome['kind']}: {outcome['message']}"))
            return
        for i, done in zip(indices, outcome["value"], strict=True):
            results[i] = Completion(**done)

    async def load_adapter(self, version: int, path: str) -> None:
        """Make adapter ``version`` live on every live replica and wait for all of them; a
        replica that fails to load it is killed and counted lost (it would serve stale weights)."""
        import ray

        async with self._adapter_lock:
            live = self._live()
            files: Any = None
            if self.cluster.adapters == "content":
                content = await anyio.to_thread.run_sync(read_adapter, path)
                files = await anyio.to_thread.run_sync(ray.put, content)  # once, whatever the replica count

            async def one(member: Replica) -> None:
                try:
                    outcome = await self._call(
                        member, "load_adapter", version, files, None if files is not None else str(path)
                    )
                except ReplicaLost:
                    return
                if not (outcome["ok"] and outcome["value"] == version):
                    why = (
                        f"{outcome['kind']}: {outcome['message']}"
                        if not outcome["ok"]
                        else f"serves v{outcome['value']}"
                    )
                    self._lose(member, f"stale: did not load adapter v{version} ({why})")

            async with anyio.create_task_group() as tg:
                for member in live:
                    tg.start_soon(one, member)
            if not self.live_replicas:
                raise ClusterError(f"no engine replica could load adapter v{version} ({'; '.join(self.events)})")
            self.adapter_version = version

    def rng_state(self) -> dict[str, Any] | None:
        """None: the replicas sample in their own processes (seeded per request), with no state here."""
        return None

    def set_rng_state(self, state: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        """Release every replica's engine, end the actors, leave the cluster when this run
        joined it (shielded: Ctrl-C cannot leave an actor behind)."""
        if self._closed:
            return
        self._closed = True
        await end_actors(
            [m.actor for m in self.members if m.lost is None],
            [m.actor for m in self.members],
            SHUTDOWN_S,
            self._owns_ray,
        )

    async def __aenter__(self) -> RemoteEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
