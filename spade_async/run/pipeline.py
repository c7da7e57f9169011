"""The self-play pipeline: produce rollouts, consume them with the learner, overlapped.

Why two stages and a bounded stream: generation (designer + agent plays, through the
engine and the sandbox) and learning (a GRPO step in a worker thread) use different
resources. The producer builds step ``s + 1`` with adapter ``v`` while the consumer trains
on step ``s``. The stream between them holds ``lead - 1`` batches, ``lead`` defaulting to
``selfplay.max_off_policy_steps`` (2): with one batch being trained and ``lead - 1``
waiting, the producer is at most ``lead`` steps ahead, so agent samples stay inside the
staleness bound and no queue can grow. ``sync=True`` runs the same two stages strictly one
after the other, for comparison and debugging.

Staleness: agent samples older than ``max_off_policy_steps`` versions are dropped and
counted. Designer samples are *meant* to be late (scored k steps after they were written)
and are corrected by truncated importance sampling; they are dropped only past
``regen_every + max_off_policy_steps`` versions.

Consistency for resume: the producer snapshots everything the curriculum needs at the end
of each step and sends it with the batch; the consumer checkpoints that snapshot together
with the learner state, so a checkpoint is always one coherent point in the run.

What the pipeline does not do: each part of a step has its owner and the pipeline only calls
it in order. A step is: steering's queued actions, a design round when due (the generator), the
play round with its audits (:mod:`spade_async.run.plays`, :mod:`spade_async.run.audits`), its
scoring (:mod:`spade_async.run.scoring`); then, in the consumer, the update, the adapter's
publication with its probe (:mod:`spade_async.run.publisher`), the step row, the checkpoint
(:mod:`spade_async.run.checkpointer`) and the step log (:mod:`spade_async.run.step_log`).
They are built in :mod:`spade_async.run.stages`.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from spade_async.cluster.status import Fleet, record_cluster_status
from spade_async.config import Config
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.samples import TrainSample
from spade_async.run.control import RunControl, heartbeat, watch_signals
from spade_async.run.plays import Played
from spade_async.run.stages import Handles, Stages
from spade_async.util.failpoints import failpoint

LEARNER_RENAMES = {"tokens_per_s": "learner_tokens_per_s"}
"""Learner stats renamed in the step's metrics where a producer metric has the same name."""


class Saver(Protocol):
    """Where the pipeline's checkpoints go (:class:`spade_async.run.checkpointer.Checkpointer`)."""

    def due(self, step: int) -> bool: ...

    async def save(self, step: int, snapshot: dict[str, Any]) -> Any: ...


@dataclass
class Batch:
    """One step's rollouts, ready for the learner."""

    step: int
    samples: list[TrainSample]
    metrics: dict[str, float]
    snapshot: dict[str, Any]
    """Curriculum + corpus + engine RNG state at the end of this step (for the checkpoint)."""
    started: float = field(default_factory=time.perf_counter)


class Pipeline:
    """Drives the stages of one run; ``run()`` drives steps ``start_step .. max_steps - 1``."""

    def __init__(
        self, cfg: Config, run: Handles, stages: Stages, *, control: RunControl, fleets: Sequence[Fleet] = ()
    ) -> None:
        self.cfg = cfg
        self.sp = cfg.selfplay
        self.engine, self.pool, self.store = run.engine, run.pool, run.store
        self.learner, self.corpus, self.run_dir, self.report = run.learner, run.corpus, run.run_dir, run.report
        self.stages = stages
        self.curriculum = stages.curriculum
        self.generator = stages.generator
        self.steering = stages.steering
        self.archive_sample = stages.archive_sample
        self.loop_eval = stages.loop_eval
        self.archive = stages.archive
        self.publisher = stages.publisher
        self.replay = stages.replay
        self.checkpointer: Saver = stages.checkpointer
        self.control = control
        self.fleets = list(fleets)
        """Remote pools and engine replicas the launcher started (none on one box)."""
        self.stale_dropped = 0
        self.start_step = 0
        self._unsaved: Batch | None = None
        """The last consumed batch when no checkpoint covers it yet (written on a clean stop)."""
        self._done = 0
        """Steps consumed by the current ``run()``."""

    # -- control (TUI / signals) ---------------------------------------------------
    def pause(self) -> None:
        self.control.pause()

    def resume(self) -> None:
        self.control.resume()

    def request_stop(self) -> None:
        self.control.request_stop()

    @property
    def stop_requested(self) -> bool:
        return self.control.stop_requested

    # -- snapshot ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A deep copy: the producer keeps mutating the live set after sending the batch."""
        return copy.deepcopy(
            {
                "curriculum": self.curriculum.state(),
                "corpus": self.corpus.state(),
                "engine_rng": self.engine.rng_state(),
                "stale_dropped": self.stale_dropped,
                "archive": self.archive_sample.state(),
            }
        )

    def restore(self, snap: dict[str, Any]) -> None:
        self.curriculum.load_state(snap["curriculum"])
        self.corpus.load_state(snap["corpus"])
        if snap.get("engine_rng") is not None:
            self.engine.set_rng_state(snap["engine_rng"])
        self.stale_dropped = int(snap.get("stale_dropped", 0))
        self.archive_sample.load_state(snap.get("archive"))  # absent from checkpoints before the archive

    # -- producer ---------------------------------------------------------------------------
    async def _play_all(self, step: int) -> Played:
        return await self.stages.plays.play(step, self.pool)

    async def _score_plays(self, step: int, played: Played) -> tuple[list[TrainSample], dict[str, float]]:
        return await self.stages.scorer.score(step, played)

    def _rollout_tokens(self) -> int:
        """Tokens the engine generated for this run's rollouts (in-loop evaluation's and archive rounds' left out)."""
        return self.engine.generated_tokens - self.loop_eval.generated_tokens - self.archive.generated_tokens

    async def produce(self, step: int) -> Batch:
        """Build one step's batch (steer, design if due, play, score)."""
        t0 = time.perf_counter()
        metrics: dict[str, float] = {"valid_fraction": math.nan}
        designer: list[TrainSample] = []
        await self.steering.apply_queued(step)  # between steps: the requests queued since the last one
        if self.curriculum.needs_regen(step):
            generation_metrics, designer = await self.generator.regenerate(step)
            metrics.update(generation_metrics)
        t_design = time.perf_counter() - t0
        tokens_before = self._rollout_tokens()
        played = await self._play_all(step)
        t_play = time.perf_counter() - t0 - t_design
        samples, play_metrics = await self._score_plays(step, played)
        metrics.update(play_metrics)
        metrics.update(await record_cluster_status(step, self.fleets, self.store))
        samples += designer
        if designer:
            metrics["designer_reward_mean"] = statistics.fmean(s.reward for s in designer)
        generated = self._rollout_tokens() - tokens_before
        metrics.update(time_design_s=t_design, time_play_s=t_play, tokens_per_s=generated / max(t_play, 1e-9))
        snapshot = self.snapshot()
        if self.checkpointer.due(step):  # stats of every environment, so a resume restores memory exactly
            snapshot["env_stats"] = await self.store.environment_stats()
        return Batch(step=step, samples=samples, metrics=metrics, snapshot=snapshot)

    # -- consumer ---------------------------------------------------------------------------
    def _fresh_enough(self, sample: TrainSample, version: int) -> bool:
        limit = self.sp.max_off_policy_steps + (self.sp.regen_every if sample.role == "designer" else 0)
        return version - sample.adapter_version <= limit

    def _train(self, samples: list[TrainSample], replay: list[TrainSample]) -> dict[str, float]:
        failpoint("learn")  # inside the learner's worker thread, before the update
        assert self.learner is not None
        version = self.learner.version
        stats = self.learner.train_step(samples)
        if replay and self.replay is not None and self.learner.version != version:
            # the warm start's pairs, in the version this update made (run/replay.py)
            sft = self.learner.supervised_step(
                replay, self.replay.max_seq_len, self.cfg.warmstart.lr, new_version=False
            )
            stats.update(
                replay_loss=sft["sft_loss"], replay_tokens=sft["sft_tokens"], replay_grad_norm=sft.get("grad_norm", 0.0)
            )
        return stats

    async def _fresh(self, batch: Batch, version: int) -> list[TrainSample]:
        """The batch's samples inside the staleness bound (drops counted and recorded)."""
        fresh = [s for s in batch.samples if self._fresh_enough(s, version)]
        dropped = len(batch.samples) - len(fresh)
        if dropped:
            self.stale_dropped += dropped
            await self.store.record_event(
                batch.step, "stale_drop", f"dropped {dropped} samples older than the staleness bound"
            )
        if not self.sp.train_designer:
            fresh = [s for s in fresh if s.role == "agent"]
        return fresh

    async def _learn(self, step: int, fresh: list[TrainSample]) -> dict[str, float]:
        """One update on ``fresh``; a new version is published (written, loaded, probed)."""
        if self.learner is None or not fresh:
            return {}
        version = self.learner.version
        replay = self.replay.pairs(step) if self.replay is not None else []
        stats = await anyio.to_thread.run_sync(CPU_SHARE.staged(self._train), fresh, replay)
        # The learner's forward rate has its own name: ``tokens_per_s`` is the step's generation
        # rate (set by ``produce``), which the learner's used to overwrite on every trained step.
        metrics = {LEARNER_RENAMES.get(k, k): float(v) for k, v in stats.items() if isinstance(v, int | float)}
        if self.learner.version != version and self.publisher is not None:  # nothing to train on: no new version
            metrics.update(await self.publisher.publish(step))
        return metrics

    async def consume(self, batch: Batch) -> dict[str, float]:
        t0 = time.perf_counter()
        metrics = dict(batch.metrics)
        version = self.learner.version if self.learner else self.engine.adapter_version
        fresh = await self._fresh(batch, version)
        metrics.update(await self._learn(batch.step, fresh))
        self.loop_eval.request(batch.step)  # never waits: skipped (and counted) while one is running
        self.archive.request(batch.step)  # the same: never waits
        metrics["stale_dropped"] = float(self.stale_dropped)
        metrics["adapter_version"] = float(self.engine.adapter_version)
        metrics["time_learn_s"] = time.perf_counter() - t0
        metrics["samples_offered"] = float(len(fresh))
        await self.store.record_step(
            batch.step, self.engine.adapter_version, metrics, wall_s=time.perf_counter() - batch.started
        )
        if self.checkpointer.due(batch.step):
            await self.checkpointer.save(batch.step, batch.snapshot)
            self._unsaved = None
        else:
            self._unsaved = batch
        await self.stages.step_log.write(batch.step, metrics)
        return metrics

    def close_trackers(self) -> None:
        """Flush and close the tracking sinks (idempotent)."""
        self.stages.step_log.close()

    # -- drivers --------------------------------------------------------------------------------
    async def run(self, *, sync: bool = False, lead: int | None = None) -> int:
        """Run to ``run.max_steps`` (or until stopped); returns the number of steps done.

        ``lead`` is how many steps the producer may run ahead of the learner (default
        ``max_off_policy_steps``, which keeps every agent sample inside the staleness bound;
        tests set it higher to exercise the drop path).
        """
        lead = self.sp.max_off_policy_steps if lead is None else lead
        self._done = 0
        async with anyio.create_task_group() as root:
            root.start_soon(watch_signals, self.control, root.cancel_scope, self.report)
            root.start_soon(heartbeat, self.store)
            root.start_soon(self.loop_eval.serve, self.start_step)
            root.start_soon(self.archive.serve, self.start_step)
            if not sync and lead >= 1:
                self._start_overlapped(root, lead)
            else:
                await self._one_by_one()
                await self._finish(root)
        await self._after(self._done)
        return self._done

    def _steps(self) -> range:
        return range(self.start_step, self.cfg.run.max_steps)

    async def _one_by_one(self) -> None:
        """The two stages strictly one after the other (``sync``)."""
        for step in self._steps():
            if self.stop_requested:
                break
            await self.control.wait()
            await self.consume(await self.produce(step))
            self._done += 1

    def _start_overlapped(self, root: TaskGroup, lead: int) -> None:
        """The producer up to ``lead`` steps ahead of the consumer, through a bounded stream."""
        send, receive = anyio.create_memory_object_stream[Batch](lead - 1)

        async def producer() -> None:
            async with send:
                for step in self._steps():
                    if self.stop_requested:
                        break
                    await self.control.wait()
                    await send.send(await self.produce(step))

        async def consumer() -> None:
            async with receive:
                async for batch in receive:
                    await self.consume(batch)
                    self._done += 1
            await self._finish(root)

        root.start_soon(producer)
        root.start_soon(consumer)

    async def _finish(self, root: TaskGroup) -> None:
        """The evaluations beside the stages finish (drained unless stopped); then everything ends."""
        await self.loop_eval.finish(drain=not self.stop_requested)
        await self.archive.finish(drain=not self.stop_requested)
        root.cancel_scope.cancel()

    async def _after(self, done: int) -> None:
        """At the end: the last generation's designs scored; on a clean stop, the last step checkpointed."""
        if done and not self.stop_requested and self.start_step + done >= self.cfg.run.max_steps:
            with anyio.CancelScope(shield=True):
                await self.generator.score_last_generation(self.cfg.run.max_steps - 1)
        if self.stop_requested and self._unsaved is not None:
            with anyio.CancelScope(shield=True):  # a clean stop leaves nothing to redo
                snapshot = self._unsaved.snapshot
                snapshot.setdefault("env_stats", await self.store.environment_stats())
                await self.checkpointer.save(self._unsaved.step, snapshot)
                self._unsaved = None
