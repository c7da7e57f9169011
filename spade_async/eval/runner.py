"""Score the base model and each adapter on the same items, then pair them up.

Why one engine for all models: loading the base weights once and swapping LoRA adapters in
(``engine.load_adapter``) is what the trainer does anyway; the base model is always scored
first (an engine cannot drop back to it once an adapter is live), and every adapter is then
compared with the base on exactly the items the base saw.

Items run concurrently (the HF engine batches concurrent requests, the sandbox runs each
episode in its own child), bounded by ``concurrency``. The base model's scores of a suite may
come from an earlier eval (``eval.base_cache``): the base model is then not run on it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.eval.stats import PairedDelta, paired_bootstrap
from spade_async.eval.suites import BatchScoring, EvalContext, EvalItem, ItemScore, Suite
from spade_async.sandbox.interface import EnvPool

BASE = "base"
ALL_TASKS = "*"


@dataclass(frozen=True)
class ModelSpec:
    """A model to score: the base (``adapter=None``) or a PEFT adapter folder."""

    label: str
    adapter: str | None = None
    step: int | None = None
    """Training step of the adapter's checkpoint, when it came from one: the database's 0-based
    index (the label and everything shown count from 1: spade_async.util.steps)."""


@dataclass
class SuiteScores:
    suite: Suite
    items: list[EvalItem]
    scores: dict[str, list[ItemScore]] = field(default_factory=dict)
    """Model label -> one score per item, in ``items`` order."""


@dataclass(frozen=True)
class ResultRow:
    """One figure of the results table: a model on a suite (or one task of it) for one metric."""

    model: str
    suite: str
    task: str
    metric: str
    n: int
    mean: float
    base_mean: float | None
    delta: float | None
    low: float | None
    high: float | None
    n_errors: int
    adapter: str | None = None
    step: int | None = None

    def as_dict(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and math.isnan(v) else v

        return {k: clean(v) for k, v in self.__dict__.items()}


Progress = Callable[[str, int, int], None]
"""``progress(model_label, done, total)``: once with ``done = 0`` when the model starts, then per item."""


async def score_model(
    ctx: EvalContext, suites: list[SuiteScores], label: str, *, concurrency: int, progress: Progress | None = None
) -> None:
    """Score every item of every suite with the model now loaded in ``ctx.engine``: item by item,
    ``concurrency`` at once; then each :class:`BatchScoring` suite (lm-eval) alone, all its items
    in one call (it drives the engine's model itself, so nothing else may run beside it)."""
    batched = [(s, scorer) for s in suites if isinstance(scorer := s.suite, BatchScoring)]
    alone = {id(s) for s, _ in batched}
    work = [(s, i, item) for s in suites if id(s) not in alone for i, item in enumerate(s.items)]
    total = len(work) + sum(len(s.items) for s, _ in batched)
    for s in suites:
        s.scores[label] = [ItemScore(math.nan, False, "not scored")] * len(s.items)
    limiter = anyio.CapacityLimiter(concurrency)
    done = 0
    if progress is not None:
        progress(label, 0, total)  # the model starts now (time estimates measure from here)

    async def one(s: SuiteScores, i: int, item: EvalItem) -> None:
        nonlocal done
        async with limiter:
            s.scores[label][i] = await s.suite.score(ctx, item)
        done += 1
        if progress is not None:
            progress(label, done, total)

    async with anyio.create_task_group() as tg:
        for s, i, item in work:
            tg.start_soon(one, s, i, item)
    for s, scorer in batched:
        scores = await scorer.score_items(ctx, s.items)
        if len(scores) != len(s.items):
            raise ValueError(f"suite {s.suite.name}: {len(scores)} scores for {len(s.items)} items")
        s.scores[label] = list(scores)
        done += len(s.items)
        if progress is not None:
            progress(label, done, total)


BaseScored = Callable[[list[SuiteScores], float], None]
"""``on_base(suites_scored, seconds)``: called once the base model has scored its uncached suites."""


async def evaluate(
    engine: Engine,
    pool: EnvPool | None,
    cfg: Config,
    suites: list[Suite],
    models: list[ModelSpec],
    *,
    concurrency: int = 16,
    progress: Progress | None = None,
    cached_base: dict[int, list[ItemScore]] | None = None,
    on_base: BaseScored | None = None,
) -> tuple[list[SuiteScores], dict[str, float]]:
    """Score ``models`` (the first must be the base) on ``suites``; returns scores and seconds per model.

    ``cached_base`` maps a suite's index to the base model's scores from an earlier eval (one per
    item, in ``items()`` order): those suites are not played by the base model at all, and a
    base model with every suite cached is never run (``on_base`` then is not called).
    """
    if not models or models[0].adapter is not None:
        raise ValueError("the first model must be the base model (adapter=None)")
    table = [SuiteScores(s, s.items()) for s in suites]
    for i, scores in (cached_base or {}).items():
        if len(scores) != len(table[i].items):
            raise ValueError(
                f"cached base scores of suite {table[i].suite.name}: {len(scores)} for {len(table[i].items)} items"
            )
        table[i].scores[models[0].label] = list(scores)
    ctx = EvalContext(engine, pool, cfg)
    seconds: dict[str, float] = {}
    for version, model in enumerate(models):
        t0 = time.perf_counter()
        todo = [s for i, s in enumerate(table) if model.adapter is not None or i not in (cached_base or {})]
        if model.adapter is not None:
            await engine.load_adapter(version, model.adapter)
        if todo:
            await score_model(ctx, todo, model.label, concurrency=concurrency, progress=progress)
        seconds[model.label] = time.perf_counter() - t0
        if model.adapter is None and todo and on_base is not None:
            on_base(todo, seconds[model.label])
    return table, seconds


def _pairs(
    base: list[ItemScore], other: list[ItemScore], idx: list[int], solved: bool
) -> tuple[list[float], list[float], int]:
    a, b, errors = [], [], 0
    for i in idx:
        if base[i].error is not None or other[i].error is not None:
            errors += 1
            continue
        a.append(float(base[i].solved) if solved else base[i].score)
        b.append(float(other[i].solved) if solved else other[i].score)
    return a, b, errors


def summarise(table: list[SuiteScores], models: list[ModelSpec], *, seed: int = 0) -> list[ResultRow]:
    """Rows for every model x suite x (all tasks, then each task) x metric; adapters get the
    paired delta against the base with its 95% bootstrap interval."""
    rows: list[ResultRow] = []
    for s in table:
        tasks = [ALL_TASKS, *sorted({item.task for item in s.items})]
        base_scores = s.scores[models[0].label]
        for model in models:
            mine = s.scores[model.label]
            for task in tasks:
                idx = [i for i, item in enumerate(s.items) if task == ALL_TASKS or item.task == task]
                for metric, solved in ((s.suite.metrics[0], False), (s.suite.metrics[1], True)):
                    a, b, errors = _pairs(base_scores, mine, idx, solved)
                    if model.adapter is None:
                        mean = sum(b) / len(b) if b else math.nan
                        rows.append(
                            ResultRow(
                                model.label,
                                s.suite.name,
                                task,
                                metric,
                                len(b),
                                mean,
                                None,
                                None,
                                None,
                                None,
                                errors,
                                None,
                                None,
                            )
                        )
                        continue
                    d: PairedDelta = paired_bootstrap(a, b, seed=seed)
                    rows.append(
                        ResultRow(
                            model.label,
                            s.suite.name,
                            task,
                            metric,
                            d.n,
                            d.other_mean,
                            d.base_mean,
                            d.delta,
                            d.low,
                            d.high,
                            errors,
                            model.adapter,
                            model.step,
                        )
                    )
    return rows
