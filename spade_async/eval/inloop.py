"""In-loop held-out evaluation: the live policy on a small held-out set, while training goes on.

Why: ``spade-async eval`` answers "did the adapter beat the base model" after a run; during a
long run a user wants the same figure as a curve (``eval.every`` steps), without paying for
it in learner time. So an :class:`InLoopEval` runs as one task of the pipeline's root task
group and shares the engine with the training rollouts: it costs generation time (the engine
batches its requests with the rollouts'), never learner time.

Protocol:

- **Baseline.** At the start of a fresh run, before the first adapter is published, the base
  model is scored once on the eval items (the suite of ``eval.suite`` on the ``eval.split``
  seeds, ``eval.episodes`` per environment). It runs alongside step 1's rollouts; the first
  ``load_adapter`` waits for it, because the engine cannot serve the base model once an
  adapter is live. Its per-item scores go to ``RUN_DIR/eval/loop_base.json`` (the pairing
  needs items, not means) and its summary rows to the ``evals`` table (``eval_id``
  ``loop-base``, ``step`` NULL); a resumed run reuses them instead of scoring again (it could
  not: its adapter is already live).
- **Requests.** After every ``eval.every``-th step the consumer sends the step into a
  zero-buffer stream with ``send_nowait``: it is accepted only when the evaluator is idle,
  waiting to receive. Otherwise the request is skipped and counted (``skipped``), and the
  learner goes on. (A one-slot buffer would let a request wait behind a running evaluation
  and then score a newer adapter than its step says; a skipped request costs nothing.)
- **Honest labels.** Evaluation episodes, like training rollouts, can straddle an adapter
  swap. Every completion carries the version that produced it; the rows record the versions
  actually used: ``adapter`` = ``v5``, or ``v5-v6`` when a swap happened mid-evaluation.
  ``step`` is the training step after which the evaluation was requested. The model label is
  ``loop`` (one curve, whose newest row the TUI and the report show).
- **Results.** Rows in the ``evals`` table (``eval_id`` ``loop-step-N``, N counted from 1 as
  on the console, the ``step`` column the database's 0-based index: means, the paired
  delta against the base with its 95% bootstrap interval, n), figures to the tracking sinks
  (``eval/return``, ``eval/return_delta``, ...; see ``tracking.names.loop_eval_metrics``) at
  step N, and one console line.
- **Resume.** ``Store.truncate_after`` deletes ``loop-step-N`` rows past the checkpoint (those
  steps are replayed and evaluated again); the base rows and file stay.
- **End of run.** A run that reaches ``max_steps`` lets an evaluation in flight finish; a
  stop (Ctrl-C, TUI) or a failure cancels it.

Evaluation episodes go through the same :func:`play_episode` as training, so every sandbox call
has its timeout and generated code runs only in the sandbox. An evaluation that fails
unexpectedly is reported and switches in-loop evaluation off; it never stops training.
Sampling shares the engine's random state with the rollouts, so a run with in-loop evaluation
does not sample the same rollouts as the same run without it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from spade_async.config import Config, ConfigError
from spade_async.engine.base import Completion, Engine, GenerationRequest
from spade_async.eval.beside import BesideTask
from spade_async.eval.runner import (
    ALL_TASKS,
    BASE,
    ModelSpec,
    ResultRow,
    SuiteScores,
    score_model,
    summarise,
)
from spade_async.eval.suites import BatchScoring, EvalContext, ItemScore, SuiteError, build_suite
from spade_async.memory.store import LOOP_BASE_EVAL_ID, LOOP_EVAL_PREFIX, Store
from spade_async.sandbox.interface import EnvPool
from spade_async.tracking.names import loop_eval_metrics
from spade_async.tracking.sinks import Sink
from spade_async.util.steps import shown

LOOP = "loop"
"""Model label of in-loop evaluation rows (the adapter column holds the versions used)."""
BASE_FILE = Path("eval") / "loop_base.json"
"""Per-item base-model scores, relative to the run folder."""


class VersionTap:
    """The engine as evaluation sees it: records the adapter version of every completion and
    the tokens generated (kept out of the training throughput), and holds each request while
    the run is paused (``gate``)."""

    def __init__(
        self,
        engine: Engine,
        gate: Callable[[], Awaitable[None]] | None = None,
        count: Callable[[int], None] | None = None,
    ) -> None:
        self._engine = engine
        self._gate = gate
        self._count = count
        self.versions: set[int] = set()
        self.tokens = 0

    # -- the rest of the Engine protocol, passed through -------------------------------
    @property
    def adapter_version(self) -> int:
        return self._engine.adapter_version

    @property
    def max_model_len(self) -> int | None:
        return self._engine.max_model_len

    @property
    def generated_tokens(self) -> int:
        return self._engine.generated_tokens

    async def load_adapter(self, version: int, path: str) -> None:
        await self._engine.load_adapter(version, path)

    def encode(self, text: str) -> list[int]:
        return self._engine.encode(text)

    def decode(self, token_ids: list[int]) -> str:
        return self._engine.decode(token_ids)

    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        return self._engine.chat_text(messages, add_generation_prompt, enable_thinking, tools)

    def chat_prompt(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        return self._engine.chat_prompt(messages, add_generation_prompt, enable_thinking, tools)

    @property
    def eos_token_id(self) -> int:
        return self._engine.eos_token_id

    @property
    def eos_text(self) -> str:
        return self._engine.eos_text

    async def aclose(self) -> None:
        """The tap does not own the engine: closing it leaves the engine running."""

    def rng_state(self) -> dict[str, Any] | None:
        return self._engine.rng_state()

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self._engine.set_rng_state(state)

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if self._gate is not None:
            await self._gate()
        out = await self._engine.generate(requests)
        self.versions.update(c.adapter_version for c in out)
        tokens = sum(len(c.token_ids) for c in out)
        self.tokens += tokens
        if self._count is not None:
            self._count(tokens)
        return out


def versions_label(versions: set[int]) -> str:
    """``v3``, or ``v3-v4`` when the evaluation straddled an adapter swap."""
    lo, hi = min(versions), max(versions)
    return f"v{lo}" if lo == hi else f"v{lo}-v{hi}"


def headline(rows: Sequence[ResultRow], metric: str) -> ResultRow | None:
    return next((r for r in rows if r.task == ALL_TASKS and r.metric == metric), None)


def format_eval_line(step: int | None, label: str, rows: Sequence[ResultRow], seconds: float, skipped: int) -> str:
    """One console line per in-loop evaluation (``step`` None: the base model)."""
    parts = []
    for row in rows:
        if row.task != ALL_TASKS:
            continue
        text = f"{row.metric} {row.mean:.3f}"
        if row.delta is not None and row.base_mean is not None:
            interval = "" if row.low is None or math.isnan(row.low) else f" [{row.low:+.3f}, {row.high:+.3f}]"
            text += f" (base {row.base_mean:.3f}, delta {row.delta:+.3f}{interval})"
        parts.append(text)
    n = rows[0].n if rows else 0
    where = "base model" if step is None else f"after step {shown(step)}, {label}"
    return f"eval {where} | {' | '.join(parts)} | n {n} | {seconds:.0f}s | skipped {skipped}"


class InLoopEval(BesideTask):
    """Scores the live policy every ``eval.every`` steps, as a task beside the pipeline's stages."""

    def __init__(
        self,
        cfg: Config,
        *,
        engine: Engine,
        pool: EnvPool,
        store: Store,
        run_dir: Path,
        report: Callable[[str], None],
        sinks: Callable[[], Sequence[Sink]],
        gate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(cfg.eval.every)
        self.cfg = cfg
        self.gate = gate
        """Awaited before each evaluation request: returns while the run is not paused."""
        self.generated_tokens = 0
        """Tokens generated for evaluation so far (the pipeline leaves them out of tokens/s)."""
        self.engine, self.pool, self.store, self.run_dir = engine, pool, store, run_dir
        self.report, self.sinks = report, sinks
        self.base: list[ItemScore] | None = None
        self.evaluated: list[int] = []
        """Steps evaluated so far in this process, in order."""
        self.running = False
        """An evaluation of the live policy is in flight."""
        self.base_ready = anyio.Event()
        if not self.enabled:
            self.base_ready.set()
            return
        try:
            self.suite = build_suite(cfg.eval.suite, {"episodes": cfg.eval.episodes, "split": cfg.eval.split})
        except SuiteError as exc:
            raise ConfigError([f"eval.suite: {exc}"]) from None
        if isinstance(self.suite, BatchScoring):  # it drives the engine's model alone: not beside training
            raise ConfigError([f"eval.suite: {self.suite.name} runs only in `spade-async eval` (docs/lm_eval.md)"])
        self.items = self.suite.items()

    def _tap(self) -> VersionTap:
        return VersionTap(self.engine, self.gate, self._count_tokens)

    def _count_tokens(self, n: int) -> None:
        self.generated_tokens += n

    # -- the consumer's side (never blocks, except the one wait before the first adapter) ----
    async def before_publish(self) -> None:
        """The first adapter may go live only once the base model is scored."""
        await self.base_ready.wait()

    # -- the evaluator task ------------------------------------------------------------------
    async def serve(self, start_step: int) -> None:
        """Baseline (or reuse it on resume), then one evaluation per accepted request."""
        if not self.enabled:
            return
        try:
            async with self._receive:
                try:
                    await self._baseline(start_step)
                finally:
                    self.base_ready.set()
                async for step in self._receive:
                    await self._evaluate(step)
        except Exception as exc:  # evaluation is a side figure: report it, never stop training over it
            self.enabled = False
            self.report(f"in-loop evaluation failed and is off for the rest of this run: {exc!r}")
            await self.store.record_event(start_step, "error", f"in-loop evaluation failed, now off: {exc!r}"[:500])
        finally:
            self.done.set()

    async def _baseline(self, start_step: int) -> None:
        if start_step > 0:
            self.base = await anyio.to_thread.run_sync(self._load_base)
            if self.base is not None:
                await self._ensure_base_rows()
                return
            if self.engine.adapter_version != 0:
                self.report(
                    "in-loop eval: no saved base-model scores for these items and an adapter is live; "
                    "evaluations are unpaired (no delta)"
                )
                return
        t0 = time.perf_counter()
        table = SuiteScores(self.suite, self.items)
        await score_model(self._context(self._tap()), [table], BASE, concurrency=self.cfg.eval.concurrency)
        seconds = time.perf_counter() - t0
        self.base = table.scores[BASE]
        await anyio.to_thread.run_sync(self._save_base)
        rows = await anyio.to_thread.run_sync(lambda: summarise([table], [ModelSpec(BASE)]))
        await self._record(LOOP_BASE_EVAL_ID, None, rows, seconds)
        await self._track(0, {f"eval/base_{k[5:]}": v for k, v in loop_eval_metrics(rows).items()})
        self._print(format_eval_line(None, BASE, rows, seconds, self.skipped))

    async def _evaluate(self, step: int) -> None:
        self.running = True
        try:
            await self._evaluate_live(step)
        finally:
            self.running = False

    async def _evaluate_live(self, step: int) -> None:
        tap = self._tap()
        live = self.engine.adapter_version
        t0 = time.perf_counter()
        table = SuiteScores(self.suite, self.items)
        await score_model(self._context(tap), [table], LOOP, concurrency=self.cfg.eval.concurrency)
        seconds = time.perf_counter() - t0
        label = versions_label(tap.versions or {live})
        if self.base is not None:
            table.scores[BASE] = self.base
            models = [ModelSpec(BASE), ModelSpec(LOOP, label, step)]
        else:
            models = [ModelSpec(LOOP)]
        rows = await anyio.to_thread.run_sync(lambda: summarise([table], models))
        rows = [replace(r, adapter=label, step=step) for r in rows if r.model == LOOP]
        await self._record(f"{LOOP_EVAL_PREFIX}{shown(step)}", step, rows, seconds)
        self.evaluated.append(step)
        await self._track(
            shown(step), {**loop_eval_metrics(rows), "eval/skipped": float(self.skipped), "eval/seconds": seconds}
        )
        self._print(format_eval_line(step, label, rows, seconds, self.skipped))

    # -- helpers ---------------------------------------------------------------------------
    def _context(self, engine: Engine) -> EvalContext:
        return EvalContext(engine, self.pool, self.cfg)

    async def _record(self, eval_id: str, step: int | None, rows: Sequence[ResultRow], seconds: float) -> None:
        await self.store.record_evals(
            [
                {
                    **r.as_dict(),
                    "eval_id": eval_id,
                    "step": step,
                    "ci_low": r.low,
                    "ci_high": r.high,
                    "seconds": seconds,
                }
                for r in rows
            ]
        )

    async def _track(self, step: int, figures: dict[str, float]) -> None:
        for sink in self.sinks():
            await anyio.to_thread.run_sync(sink.log, step, figures)

    def _print(self, line: str) -> None:
        if "console" in self.cfg.log.backends:
            self.report(line)

    def _identity(self) -> dict[str, Any]:
        """What the saved base scores must match to be reused."""
        return {"model": self.cfg.model.name, "suite": self.suite.name, "items": [item.key for item in self.items]}

    def _save_base(self) -> None:
        assert self.base is not None
        path = self.run_dir / BASE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        scores = [[s.score, s.solved, s.error] for s in self.base]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**self._identity(), "scores": scores}))
        tmp.replace(path)

    def _load_base(self) -> list[ItemScore] | None:
        path = self.run_dir / BASE_FILE
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if {k: saved.get(k) for k in ("model", "suite", "items")} != self._identity():
            return None
        return [ItemScore(float(score), bool(solved), error) for score, solved, error in saved["scores"]]

    async def _ensure_base_rows(self) -> None:
        """A crash between writing the file and the rows leaves no rows: write them from the file."""
        if any(r["eval_id"] == LOOP_BASE_EVAL_ID for r in await self.store.evals()):
            return
        assert self.base is not None
        table = SuiteScores(self.suite, self.items, {BASE: self.base})
        rows = await anyio.to_thread.run_sync(lambda: summarise([table], [ModelSpec(BASE)]))
        await self._record(LOOP_BASE_EVAL_ID, None, rows, math.nan)
