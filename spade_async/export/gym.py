"""A ``gymnasium.Env`` over an environment that runs in the sandbox.

Why a private event loop thread: gymnasium's API is synchronous while the sandbox pool is
async; the adapter runs its own pool in a daemon thread with an anyio blocking portal, so it
works from plain scripts and inside other event loops alike, and never blocks interpreter exit.
Observations are mapped onto ``spaces.Text`` with the printable charset (other characters are
escaped as ``\\uXXXX``), so ``gymnasium.utils.env_checker.check_env`` passes.
"""

from __future__ import annotations

import queue
import string
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import gymnasium
from anyio.from_thread import BlockingPortal
from gymnasium import spaces

from spade_async.config import SandboxConfig
from spade_async.sandbox.pool import SandboxedEnv, SandboxPool

CHARSET = string.printable
MAX_OBS_CHARS = 8192
MAX_ACTION_CHARS = 256
T = TypeVar("T")


def to_printable(text: str, limit: int = MAX_OBS_CHARS) -> str:
    """``text`` with characters outside :data:`CHARSET` escaped, cut to ``limit`` characters."""
    allowed = set(CHARSET)
    out = "".join(ch if ch in allowed else ch.encode("unicode_escape").decode("ascii") for ch in text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


class _LoopThread:
    """An anyio event loop in a daemon thread, driven through a blocking portal."""

    def __init__(self) -> None:
        handoff: queue.Queue[BlockingPortal] = queue.Queue()

        async def main() -> None:
            async with BlockingPortal() as portal:
                handoff.put(portal)
                await portal.sleep_until_stopped()

        self.thread = threading.Thread(target=anyio.run, args=(main,), daemon=True, name="sandbox-gym-loop")
        self.thread.start()
        self.portal = handoff.get()

    def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        return self.portal.call(func, *args)

    def stop(self) -> None:
        self.portal.call(self.portal.stop)
        self.thread.join(timeout=10)


class SandboxedGymEnv(gymnasium.Env[str, str]):
    """``SandboxedGymEnv(source)``: the env class in ``source``, run in a fresh sandbox child.

    ``max_turns`` truncates episodes (``None``: only the env ends them). Call ``close()``.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(self, source: str, cfg: SandboxConfig | None = None, *, max_turns: int | None = None) -> None:
        self.observation_space = spaces.Text(max_length=MAX_OBS_CHARS, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=MAX_ACTION_CHARS, min_length=0, charset=CHARSET)
        self.max_turns = max_turns
        self._source = source
        self._loop = _LoopThread()
        self._env: SandboxedEnv | None = None
        self._turn = 0
        try:
            self._pool = self._loop.call(SandboxPool.start, cfg or SandboxConfig())
            self._env = self._loop.call(self._pool.open, source)
        except BaseException:
            self.close()
            raise

    def _live_env(self) -> SandboxedEnv:
        """The current child, replaced by a fresh one if an earlier error killed it."""
        if self._env is None or self._env._dead is not None:
            if self._env is not None:
                self._loop.call(self._env.aclose)
            self._env = self._loop.call(self._pool.open, self._source)
        return self._env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._turn = 0
        obs, info = self._loop.call(self._live_env().reset, seed)
        return to_printable(obs), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self._loop.call(self._live_env().step, str(action))
        self._turn += 1
        truncated = result.truncated or (self.max_turns is not None and self._turn >= self.max_turns)
        return to_printable(result.obs), float(result.reward), result.terminated, truncated, result.info

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None:
            return
        if self._env is not None:
            loop.call(self._env.aclose)
        pool = getattr(self, "_pool", None)
        if pool is not None:
            loop.call(pool.aclose)
        loop.stop()
        self._loop = None  # type: ignore[assignment]
