"""A sandbox pool on one Ray node: the actor that wraps our local :class:`SandboxPool`.

Why plain data in and out: environment code and actions reach the node as strings, results
come back as dicts and lists (never pickled callables, never exception objects whose classes
the driver would have to trust). Every layer and limit of the local pool holds, because it
*is* the local pool: the actor only keeps a table of open envs by number. A pool that cannot
reach ``sandbox.min_isolation`` on this node answers its refusal instead of starting.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio

from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxedEnv, SandboxError, SandboxPool

T = TypeVar("T")
Outcome = dict[str, Any]
"""``{"ok": True, "value": ...}`` or ``{"ok": False, "kind": <SandboxError subclass name>,
"message": ..., "output": ...}``."""


async def _guard(work: Awaitable[Any]) -> Outcome:
    try:
        return {"ok": True, "value": await work}
    except SandboxError as exc:
        return {"ok": False, "kind": type(exc).__name__, "message": str(exc), "output": exc.output}


class PoolActor:
    """Holds one :class:`SandboxPool`; made remote with ``ray.remote`` by the client."""

    def __init__(self) -> None:
        self._pool: SandboxPool | None = None
        self._envs: dict[int, SandboxedEnv] = {}
        self._next = 0
        self._closing = 0
        """Closes in progress (fire-and-forget from the driver); shutdown waits for them."""
        self._quiet: anyio.Event | None = None

    async def start(self, sandbox: dict[str, Any], disable: list[str]) -> Outcome:
        """Start the pool on this node; a refusal (isolation too low) comes back as data."""
        import ray

        where = {"node": ray.get_runtime_context().get_node_id()[:8], "host": socket.gethostname(), "pid": os.getpid()}
        try:
            self._pool = await SandboxPool.start(SandboxConfig.model_validate(sandbox), disable=frozenset(disable))
        except SandboxError as exc:
            return {"ok": False, "kind": type(exc).__name__, "message": str(exc), "output": "", **where}
        return {"ok": True, "value": self._pool.isolation.as_dict(), "warnings": list(self._pool.warnings), **where}

    def _live(self) -> SandboxPool:
        if self._pool is None:
            raise SandboxError("the remote sandbox pool was not started")
        return self._pool

    async def _open(self, source: str) -> dict[str, Any]:
        env = await self._live().open(source)
        self._next += 1
        self._envs[self._next] = env
        return {
            "id": self._next,
            "class_name": env.class_name,
            "has_solution": env.has_solution,
            "load_output": env.load_output,
        }

    async def open(self, source: str) -> Outcome:
        return await _guard(self._open(str(source)))

    def _env(self, env_id: int) -> SandboxedEnv:
        env = self._envs.get(env_id)
        if env is None:
            raise SandboxError(f"remote env {env_id} is not open on this pool")
        return env

    async def _on_env(self, env_id: int, work: Awaitable[Any]) -> Outcome:
        outcome = await _guard(work)
        if not outcome["ok"]:  # the local env killed its child already; forget it
            self._envs.pop(env_id, None)
        return outcome

    async def reset(self, env_id: int, seed: int | None) -> Outcome:
        async def go() -> list[Any]:
            obs, info = await self._env(env_id).reset(seed)
            return [obs, info]

        return await self._on_env(env_id, go())

    async def step(self, env_id: int, action: str) -> Outcome:
        async def go() -> dict[str, Any]:
            r = await self._env(env_id).step(str(action))
            return {
                "obs": r.obs,
                "reward": r.reward,
                "terminated": r.terminated,
                "truncated": r.truncated,
                "info": r.info,
                "output": r.output,
            }

        return await self._on_env(env_id, go())

    async def solution(self, env_id: int) -> Outcome:
        async def go() -> list[str] | None:
            return await self._env(env_id).solution()

        return await self._on_env(env_id, go())

    async def close(self, env_id: int) -> None:
        env = self._envs.pop(env_id, None)
        if env is not None:
            self._closing += 1
            try:
                await env.aclose()
            finally:
                self._closing -= 1
                if self._closing == 0 and self._quiet is not None:
                    self._quiet.set()

    async def inspect(self, source: str) -> Outcome:
        return await _guard(self._live().inspect(str(source)))

    async def info(self) -> dict[str, Any]:
        """Live children, machinery events and restarts of this pool, and where it runs."""
        pool = self._pool
        return {
            "node": socket.gethostname(),
            "pid": os.getpid(),
            "open": len(self._envs),
            "live": pool.live if pool else 0,
            "events": list(pool.events) if pool else [],
            "restarts": pool.restarts if pool else 0,
        }

    async def shutdown(self) -> None:
        """Kill every child and stop the fork-server (the actor is killed after this)."""
        envs, self._envs = list(self._envs.values()), {}
        for env in envs:
            await env.aclose()
        if self._closing:  # a child being killed must be reaped before the fork-server stops
            self._quiet = anyio.Event()
            await self._quiet.wait()
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
