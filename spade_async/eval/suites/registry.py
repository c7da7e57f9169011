"""The suite plugin protocol and registry: what a held-out benchmark must provide.

Why a protocol: the built-in suites (games on held-out seeds, reasoning-gym, a folder of
environment files) cover what runs offline; GPQA, LiveCodeBench or BFCL need data that a
user has to fetch. A loader for one of them is a class with ``name``, ``metrics``,
``items()`` and ``score()``, registered with :func:`register_suite`; the runner, the
table, the database and the report then handle it like the built-in ones.

Each item gets two numbers per model: ``score`` (a return or a partial credit) and
``solved`` (0/1). Suites name them (``metrics``) for display: games call them
``return`` and ``win_rate``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.sandbox.interface import EnvPool
from spade_async.util.errors import UserError


class SuiteError(UserError):
    """A suite cannot be built as asked (unknown name, missing folder, bad option)."""

    exit_code = 2  # bad input, like a usage error


@dataclass(frozen=True)
class EvalItem:
    """One thing to score: a (game, seed) pair, a question, ... ``key`` is unique in its suite."""

    task: str
    key: str
    payload: Any = field(compare=False, repr=False)


@dataclass(frozen=True)
class ItemScore:
    """A model's result on one item. ``error`` set: the item could not be scored (not paired)."""

    score: float
    solved: bool
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class EvalContext:
    """What a suite may use to score: the engine (with the model under test loaded), the
    sandbox, and the run's config (sampling, turn limits, action prefill)."""

    engine: Engine
    pool: EnvPool | None
    cfg: Config


@runtime_checkable
class Suite(Protocol):
    name: str
    """Short name used in tables, JSON and the database (``games``, ``reasoning_gym``)."""
    metrics: tuple[str, str]
    """Display names of (score, solved), e.g. ``("return", "win_rate")``."""
    needs_sandbox: bool
    """Whether ``score`` plays environment code (the runner starts the sandbox only then)."""

    def items(self) -> list[EvalItem]:
        """Every item, in a fixed order, the same on every call (pairing depends on it)."""
        ...

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        """Score one item with the model loaded in ``ctx.engine``; never raises for a bad answer."""
        ...


@runtime_checkable
class BatchScoring(Protocol):
    """A suite that scores a whole list of items in one call (lm-eval runs its own batches and
    request ordering); the runner calls this instead of ``score`` per item, after the suites
    scored item by item, and never alongside another suite."""

    async def score_items(self, ctx: EvalContext, items: list[EvalItem]) -> list[ItemScore]:
        """One score per item, in ``items`` order; never raises for a bad answer."""
        ...


@runtime_checkable
class CacheableSuite(Protocol):
    """A suite whose base-model scores may be cached (``eval.base_cache``): it can say what its
    scores depend on beyond the item keys. A suite without it is scored again on every eval."""

    def cache_fingerprint(self) -> dict[str, Any]:
        """JSON-able; any change to it is a change of the cache key."""
        ...


@runtime_checkable
class EpisodeSuite(Protocol):
    """A suite that plays environments as episodes (the games suites): the plan names them."""

    envs: Sequence[Any]
    """The environments played, each ``episodes`` times."""
    episodes: int
    split: str
    """The held-out seed range (``test`` or ``dev``)."""


@runtime_checkable
class AnswerSuite(Protocol):
    """A suite that scores one generated answer per item, at most ``max_new_tokens`` long."""

    max_new_tokens: int


SuiteFactory = Callable[[str | None, dict[str, Any]], Suite]
"""``factory(argument, options)``: argument is the text after ``name:`` in ``--suite name:arg``."""

_REGISTRY: dict[str, SuiteFactory] = {}


def register_suite(name: str) -> Callable[[SuiteFactory], SuiteFactory]:
    """Decorator: make ``--suite name[:arg]`` build a suite with this factory."""

    def wrap(factory: SuiteFactory) -> SuiteFactory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"suite {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return wrap


def suite_names() -> list[str]:
    return sorted(_REGISTRY)


def build_suite(spec: str, options: dict[str, Any] | None = None) -> Suite:
    """``games``, ``reasoning_gym``, ``envs:FOLDER`` ... -> a suite; :class:`SuiteError` if unknown."""
    name, _, arg = spec.partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SuiteError(f"unknown suite {name!r}; choose from {', '.join(sorted(_REGISTRY))}")
    return factory(arg or None, dict(options or {}))
