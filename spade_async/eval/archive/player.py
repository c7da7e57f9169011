"""Archive rounds: the live adapter replays the archived (retired) environments, beside training.

Why: a retired environment is never played again, so nothing in a run says whether the agent
still solves what it learned fifty steps ago (COvolve, arXiv 2603.28386, scores the current
policy against an archive). Every ``eval.archive_every`` steps an :class:`ArchiveEval` plays
each member of the fixed sample (spade_async.eval.archive.sample) ``eval.archive_episodes``
times, plain (no hint), on the same seeds every round, and stores per environment the
return now beside the return at retirement (``archive_evals``), the 'still solved' fraction
(``eval.archive_solved``) to the tracking sinks and one console line.

It runs as the in-loop eval does (spade_async.eval.inloop): one task of the pipeline's root
task group, sharing the engine with the rollouts (generation time, never learner time). The
consumer offers each due step with ``send_nowait`` into a zero-buffer stream: taken only when
the player is idle, otherwise skipped and counted. Completions carry their adapter version,
so a round that straddles a swap is labelled ``v5-v6``. A round that fails unexpectedly is
reported and switches the archive off; it never stops training. A run that reaches
``max_steps`` lets a round in flight finish; a stop cancels it. Episodes go through the same
:func:`play_episode` as training (the sandbox, its timeouts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

import anyio

from spade_async.config import Config
from spade_async.engine.base import Engine, Sampling
from spade_async.eval.archive.rounds import Round, round_rows, rounds
from spade_async.eval.archive.sample import ArchiveSample, Member, archive_seed
from spade_async.eval.beside import BesideTask
from spade_async.eval.inloop import VersionTap, versions_label
from spade_async.memory.store import Store
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.play.agent import Episode, agent_context_budget, play_episode
from spade_async.selfplay.play.tool_agent import play_tool_episode
from spade_async.tracking.sinks import Sink
from spade_async.util.steps import shown


def archive_metrics(r: Round, skipped: int, seconds: float) -> dict[str, float]:
    """A round's figures for the tracking sinks (``archive/...``; NaN ones left out)."""
    figures = {
        "archive/still_solved": r.fraction,
        "archive/return": r.return_now,
        "archive/return_at_retirement": r.return_then,
        "archive/envs": float(r.envs),
        "archive/skipped": float(skipped),
        "archive/seconds": seconds,
    }
    return {k: v for k, v in figures.items() if not math.isnan(v)}


def format_archive_line(r: Round, skipped: int, seconds: float) -> str:
    """One console line per archive round."""
    still = f"{r.still_solved}/{r.solved_then}" + (f" ({r.fraction:.2f})" if r.solved_then else "")
    return (
        f"archive after step {r.step}, {r.adapter} | still solved {still} | return {r.return_now:.3f} "
        f"(at retirement {r.return_then:.3f}) | envs {r.envs} | {seconds:.0f}s | skipped {skipped}"
    )


class ArchiveEval(BesideTask):
    """Replays the archive every ``eval.archive_every`` steps, as a task beside the pipeline's stages."""

    def __init__(
        self,
        cfg: Config,
        *,
        engine: Engine,
        pool: EnvPool,
        store: Store,
        sample: ArchiveSample,
        report: Callable[[str], None],
        sinks: Callable[[], Sequence[Sink]],
        gate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(cfg.eval.archive_every)
        self.cfg = cfg
        self.engine, self.pool, self.store, self.sample = engine, pool, store, sample
        self.report, self.sinks, self.gate = report, sinks, gate
        self.generated_tokens = 0
        """Tokens generated for archive rounds so far (the pipeline leaves them out of tokens/s)."""
        self.played: list[int] = []
        """Steps whose round finished in this process, in order."""
        self.running = False

    # -- the consumer's side (never blocks) ------------------------------------------------
    def due(self, step: int) -> bool:
        """A round is due and the archive has members."""
        return super().due(step) and bool(self.sample.members)

    # -- the player task ---------------------------------------------------------------------
    async def serve(self, start_step: int) -> None:
        if not self.enabled:
            return
        try:
            async with self._receive:
                async for step in self._receive:
                    self.running = True
                    try:
                        await self._round(step)
                    finally:
                        self.running = False
        except Exception as exc:  # a side figure: report it, never stop training over it
            self.enabled = False
            self.report(f"archive re-evaluation failed and is off for the rest of this run: {exc!r}")
            await self.store.record_event(start_step, "error", f"archive re-evaluation failed, now off: {exc!r}"[:500])
        finally:
            self.done.set()

    async def play(self, engine: Engine, member: Member, seed: int) -> Episode:
        """One plain play of an archived environment with the live adapter."""
        sp = self.cfg.selfplay
        sampling = Sampling.from_config(self.cfg.engine.agent)
        return await (play_tool_episode if sp.domain == "tool_use" else play_episode)(
            engine,
            self.pool,
            env_id=member.env_id,
            source=member.code,
            seed=seed,
            hint=None,
            sampling=replace(sampling, seed=seed) if sp.seeded_sampling else sampling,
            max_turns=sp.max_turns,
            max_context_tokens=agent_context_budget(sp.max_context_tokens, engine.max_model_len),
            no_action_penalty=sp.no_action_penalty,
            action_prefill=sp.action_prefill,
        )

    async def _round(self, step: int) -> None:
        members = list(self.sample.members)
        tap = VersionTap(self.engine, self.gate, self._count_tokens)
        live = self.engine.adapter_version
        limiter = anyio.CapacityLimiter(self.cfg.eval.concurrency)
        outcomes: dict[str, list[float]] = {m.env_id: [] for m in members}
        errors = dict.fromkeys(outcomes, 0)

        async def one(member: Member, i: int) -> None:
            async with limiter:
                ep = await self.play(tap, member, archive_seed(self.cfg.run.seed, member.env_id, i))
            if ep.error is None:
                outcomes[member.env_id].append(ep.outcome)
            else:
                errors[member.env_id] += 1

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for member in members:
                for i in range(self.cfg.eval.archive_episodes):
                    tg.start_soon(one, member, i)
        seconds = time.perf_counter() - t0
        label = versions_label(tap.versions or {live})
        results = [(m, outcomes[m.env_id], errors[m.env_id]) for m in members]
        stored = round_rows(step, label, results, self.cfg.eval.archive_solved, seconds)
        await self.store.record_archive(stored)
        self.played.append(step)
        (summary,) = rounds(stored)
        figures = archive_metrics(summary, self.skipped, seconds)
        for sink in self.sinks():
            await anyio.to_thread.run_sync(sink.log, shown(step), figures)
        if "console" in self.cfg.log.backends:
            self.report(format_archive_line(summary, self.skipped, seconds))

    def _count_tokens(self, n: int) -> None:
        self.generated_tokens += n
