"""What the rest of the trainer uses of a sandbox pool, as Protocols.

Why a module of its own: two pools implement it, the local fork-server pool
(:class:`spade_async.sandbox.pool.SandboxPool`) and the Ray pools on other machines
(:class:`spade_async.cluster.pool.RemoteSandboxPool`). Admission, play, evaluation and the run
are written against these names only, so a pool is chosen at start-up (``run/assemble.py``)
and nothing upstream changes, and a type checker proves both pools offer what is called.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from spade_async.config import SandboxConfig
from spade_async.sandbox.isolation import IsolationReport

if TYPE_CHECKING:
    from spade_async.sandbox.pool import StepResult


class EnvSession(Protocol):
    """One environment instance loaded in its own sandboxed child; used once, then closed."""

    class_name: str
    """The environment class the child found in the source."""
    has_solution: bool
    """Whether the class defines ``solution()`` (admission plays it)."""

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    async def step(self, action: str) -> StepResult: ...

    async def solution(self) -> list[str] | None:
        """The environment's reference solution for the last reset, if it has one."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class EnvPool(Protocol):
    """Opens environments from source in sandboxed children."""

    cfg: SandboxConfig
    isolation: IsolationReport
    """The weakest isolation any of the pool's children has (what a run may claim)."""
    warnings: list[str]
    """Isolation layers that could not be applied, for the console."""

    async def open(self, source: str) -> EnvSession:
        """A fresh child with ``source`` loaded (waits for a free slot)."""
        ...

    async def inspect(self, source: str) -> dict[str, Any]:
        """Facts about ``source``'s environment class without playing it (admission)."""
        ...

    async def aclose(self) -> None: ...
