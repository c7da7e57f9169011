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
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import secrets
import signal
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from spade_async.adapter_check import AdapterProbe
from spade_async.admission.audit import audit_play, audited
from spade_async.cluster.status import Fleet, record_cluster_status
from spade_async.config import Config
from spade_async.engine.base import Engine, Sampling
from spade_async.envs.seeds import SeedEnv
from spade_async.eval.archive.player import ArchiveEval
from spade_async.eval.archive.sample import ArchiveSample
from spade_async.eval.inloop import InLoopEval
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.base import Learner
from spade_async.learner.samples import TrainSample
from spade_async.memory.embed import TextEmbedder
from spade_async.memory.lineage import audit_event_message
from spade_async.memory.play_stats import play_error_message
from spade_async.memory.records import EpisodeRecord
from spade_async.memory.store import Store
from spade_async.run.retention import prune_adapters
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.generation import EnvGenerator
from spade_async.selfplay.health import step_play_metrics
from spade_async.selfplay.play.agent import Episode, agent_context_budget, play_episode
from spade_async.selfplay.play.scoring import Play, agent_samples
from spade_async.selfplay.play.tool_agent import play_tool_episode
from spade_async.selfplay.steering import Steering
from spade_async.tracking.names import namespaced
from spade_async.tracking.sinks import make_sinks
from spade_async.util.failpoints import failpoint
from spade_async.util.steps import shown
from spade_async.warmstart.library import warm_start_library_keys

Reporter = Callable[[str], None]

HEARTBEAT_EVERY_S = 10.0
"""How often a running pipeline stamps ``runs.heartbeat_at`` (the TUI flags a stale one)."""


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
    """Owns the stages of one run; ``run()`` drives steps ``start_step .. max_steps - 1``."""

    def __init__(
        self,
        cfg: Config,
        *,
        engine: Engine,
        pool: EnvPool,
        store: Store,
        learner: Learner | None,
        corpus: Corpus,
        seeds: list[SeedEnv],
        run_dir: Path,
        report: Reporter = print,
        checkpointer: Callable[[int, dict[str, Any]], Awaitable[None]] | None = None,
        embedder: TextEmbedder | None = None,
        fleets: Sequence[Fleet] = (),
        adapter_probe: AdapterProbe | None = None,
    ) -> None:
        self.cfg = cfg
        self.adapter_probe = adapter_probe
        """Checks the engine after each adapter load (None: not checked, e.g. a scripted learner)."""
        self.probe_failures = 0
        """Adapter probe mismatches in a row."""
        self.fleets = list(fleets)
        """Remote pools and engine replicas the launcher started (none on one box)."""
        self.sp = cfg.selfplay
        self.engine = engine
        self.pool = pool
        self.store = store
        self.learner = learner
        self.corpus = corpus
        self.run_dir = run_dir
        self.report = report
        self.checkpointer = checkpointer
        self.curriculum = Curriculum(
            self.sp,
            seed=cfg.run.seed,
            designer_temperature=cfg.engine.designer.temperature,
            n_agent_samples_per_env=self.sp.plays,
        )
        self.archive_sample = ArchiveSample(cfg.eval.archive_size, cfg.run.seed)
        """The fixed sample of retired environments the archive rounds replay (in the snapshot)."""
        self.generator = EnvGenerator(
            cfg,
            engine=engine,
            pool=pool,
            store=store,
            corpus=corpus,
            curriculum=self.curriculum,
            seeds=seeds,
            embedder=embedder,
            report=report if "console" in cfg.log.backends else None,
            library_keys=warm_start_library_keys(cfg),
            on_retire=self._archive_retirees,
        )
        self.steering = Steering(
            cfg, store=store, pool=pool, curriculum=self.curriculum, write_stats=self.generator.write_stats
        )
        """Queued steering actions (retire, pin, inject, band, designer share), applied between steps."""
        self.stale_dropped = 0
        self.audit_rng = random.Random(secrets.randbits(64))
        """Draws the play audit's seeds, actions and pauses: unpredictable, never from the run seed."""
        self.audit_retired = 0
        self.play_limiter = anyio.CapacityLimiter(cfg.sandbox.max_children)
        self.paused = anyio.Event()
        self.paused.set()  # set = running
        self.stop_requested = False
        self.start_step = 0
        self._pending_designer: list[TrainSample] = []
        self._unsaved: Batch | None = None
        """The last consumed batch when no checkpoint covers it yet (written on a clean stop)."""
        self.trackers = make_sinks(
            cfg.log.backends,
            run_dir=run_dir,
            project=cfg.log.project or cfg.run.name,
            name=cfg.run.name,
            config=cfg.model_dump(mode="json"),
        )
        """TensorBoard / trackio / W&B sinks selected in log.backends (console and jsonl are below)."""
        self.loop_eval = InLoopEval(
            cfg,
            engine=engine,
            pool=pool,
            store=store,
            run_dir=run_dir,
            report=report,
            sinks=lambda: self.trackers,
            gate=lambda: self.paused.wait(),
        )
        """Held-out evaluation every ``eval.every`` steps, beside the two stages (spade_async.eval.inloop)."""
        self.archive = ArchiveEval(
            cfg,
            engine=engine,
            pool=pool,
            store=store,
            sample=self.archive_sample,
            report=report,
            sinks=lambda: self.trackers,
            gate=lambda: self.paused.wait(),
        )
        """Retired environments replayed every ``eval.archive_every`` steps, beside the two stages
        (spade_async.eval.archive)."""

    def _archive_retirees(self, step: int, retired: list[LiveEnv]) -> None:
        """Retirees join the archive's fixed sample (only when archive rounds are on)."""
        if self.archive.enabled:
            self.archive_sample.offer(step, retired)

    # -- control (TUI / signals) ---------------------------------------------------
    def pause(self) -> None:
        self.paused = anyio.Event()

    def resume(self) -> None:
        self.paused.set()

    def request_stop(self) -> None:
        self.stop_requested = True
        self.paused.set()

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

    # -- producer: play -------------------------------------------------------------------
    async def _play_all(self, step: int) -> list[tuple[LiveEnv, Episode]]:
        sampling = Sampling.from_config(self.cfg.engine.agent)
        plays: list[tuple[LiveEnv, int, bool]] = []
        for e_idx, env in enumerate(self.curriculum.live):
            for i in range(self.sp.plays):
                plays.append((env, self._episode_seed(step, e_idx, i), False))
            for i in range(self.sp.hinted_plays if env.hint and self._hinted_due(env, step) else 0):
                plays.append((env, self._episode_seed(step, e_idx, i), True))  # matched seeds
        results: list[tuple[LiveEnv, Episode] | None] = [None] * len(plays)
        played_once = {env.env_id: anyio.Event() for env, _, _ in plays}
        turn_s: dict[str, float] = {}
        failures: dict[str, str] = {}

        async def one(i: int, env: LiveEnv, seed: int, hinted: bool) -> None:
            await self.paused.wait()
            async with self.play_limiter:
                started = time.perf_counter()
                ep = await (play_tool_episode if self.sp.domain == "tool_use" else play_episode)(
                    self.engine,
                    self.pool,
                    env_id=env.env_id,
                    source=env.code,
                    seed=seed,
                    hint=env.hint if hinted else None,
                    sampling=replace(sampling, seed=self._sampling_seed(seed, hinted))
                    if self.sp.seeded_sampling
                    else sampling,
                    max_turns=self.sp.max_turns,
                    max_context_tokens=agent_context_budget(self.sp.max_context_tokens, self.engine.max_model_len),
                    no_action_penalty=self.sp.no_action_penalty,
                    action_prefill=self.sp.action_prefill,
                )
                turn_s.setdefault(env.env_id, (time.perf_counter() - started) / max(ep.turns, 1))
            results[i] = (env, ep)
            played_once[env.env_id].set()

        async def audit(env: LiveEnv) -> None:
            """After a real play of ``env``, one audit play paced like it (spade_async.admission.audit)."""
            await played_once[env.env_id].wait()
            async with self.play_limiter:
                reason = await audit_play(
                    self.pool,
                    env.code,
                    env.promise(),
                    rng=self.audit_rng,
                    domain=self.sp.domain,
                    pace_s=turn_s.get(env.env_id, 0.0),
                )
            if reason is not None:
                failures[env.env_id] = reason

        async with anyio.create_task_group() as tg:
            for i, (env, seed, hinted) in enumerate(plays):
                tg.start_soon(one, i, env, seed, hinted)
            if self.sp.play_audit:
                for env in {env.env_id: env for env, _, _ in plays}.values():
                    if audited(env.origin):  # model-written code only (the user's own is trusted)
                        tg.start_soon(audit, env)
        for env_id, reason in failures.items():
            expelled = self.curriculum.expel(env_id, reason)
            self.audit_retired += 1
            await self.store.record_event(step, "error", audit_event_message(env_id, reason))
            if expelled is not None:
                await self.generator.write_stats(expelled, step, "invalid", None)
        return [r for r in results if r is not None and r[0].env_id not in failures]

    def _hinted_due(self, env: LiveEnv, step: int) -> bool:
        """Hinted plays: once, at the step the environment went live (default), or every step."""
        return self.sp.hinted_schedule == "every_step" or step == env.born_step

    def _sampling_seed(self, episode_seed: int, hinted: bool) -> int:
        """The agent's sampling seed for one play (the two arms of a matched pair draw apart)."""
        return (episode_seed * 2 + int(hinted)) % (2**31)

    def _episode_seed(self, step: int, env_index: int, play: int) -> int:
        """A hash of (run seed, step, env, play) over ``[0, 2**31)``: reproducible, and as spread
        as the seeds admission draws, so an environment cannot tell play from a check by its seed
        (small structured seeds were a tell)."""
        key = f"{self.cfg.run.seed}:{step}:{env_index}:{play}".encode()
        return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % (2**31)

    def _rollout_tokens(self) -> int:
        """Tokens the engine generated for this run's rollouts (in-loop evaluation's and archive rounds' left out)."""
        return self.engine.generated_tokens - self.loop_eval.generated_tokens - self.archive.generated_tokens

    async def produce(self, step: int) -> Batch:
        """Build one step's batch (design if due, play, score)."""
        t0 = time.perf_counter()
        metrics: dict[str, float] = {"valid_fraction": math.nan}
        self._pending_designer = []
        await self.steering.apply_queued(step)  # between steps: the requests queued since the last one
        if self.curriculum.needs_regen(step):
            generation_metrics, self._pending_designer = await self.generator.regenerate(step)
            metrics.update(generation_metrics)
        t_design = time.perf_counter() - t0
        tokens_before = self._rollout_tokens()
        played = await self._play_all(step)
        t_play = time.perf_counter() - t0 - t_design
        samples, play_metrics = await self._score_plays(step, played)
        metrics.update(play_metrics)
        metrics.update(await record_cluster_status(step, self.fleets, self.store))
        samples += self._pending_designer
        if self._pending_designer:
            metrics["designer_reward_mean"] = statistics.fmean(s.reward for s in self._pending_designer)
        generated = self._rollout_tokens() - tokens_before
        metrics.update(time_design_s=t_design, time_play_s=t_play, tokens_per_s=generated / max(t_play, 1e-9))
        snapshot = self.snapshot()
        if self._checkpoint_due(step):  # stats of every environment, so a resume restores memory exactly
            snapshot["env_stats"] = await self.store.environment_stats()
        return Batch(step=step, samples=samples, metrics=metrics, snapshot=snapshot)

    def _checkpoint_due(self, step: int) -> bool:
        return (step + 1) % self.cfg.run.checkpoint_every == 0 or step + 1 >= self.cfg.run.max_steps

    async def _score_plays(
        self, step: int, played: list[tuple[LiveEnv, Episode]]
    ) -> tuple[list[TrainSample], dict[str, float]]:
        ok = [(env, ep) for env, ep in played if ep.error is None]
        for env, ep in played:
            if ep.error is not None:
                self.curriculum.record_error(env.env_id)
                await self.store.record_event(step, "error", play_error_message(env.env_id, ep.error))
        for env, ep in ok:
            self.curriculum.record(step, env.env_id, ep.hinted, ep.outcome)
        await self.store.record_episodes(
            [
                EpisodeRecord(
                    step=step,
                    env_id=env.env_id,
                    adapter_version=ep.adapter_version,
                    hinted=ep.hinted,
                    outcome=ep.outcome,
                    turns=ep.turns,
                    truncated=ep.truncated,
                    transcript=ep.transcript,
                )
                for env, ep in ok
            ]
        )
        for env in self.curriculum.live:
            await self.generator.write_stats(env, step, "active", None)
        samples, zero_variance = agent_samples(
            [Play(env.env_id, ep) for env, ep in ok], self.cfg.engine.agent.temperature
        )
        metrics = step_play_metrics(
            [(env.plain.get(step, []), env.hinted.get(step, [])) for env in self.curriculum.live],
            regret_scale=self.sp.regret_scale,
            low=self.sp.plateau_low,
            high=self.sp.plateau_high,
            ramp=self.sp.plateau_ramp,
        )
        metrics.update(
            audit_retired=float(self.audit_retired),
            band_invalid=float(len(self.curriculum.rejected)),
            episodes_failed=float(len(played) - len(ok)),
            zero_variance_groups=float(zero_variance),
        )
        return samples, metrics

    # -- consumer ---------------------------------------------------------------------------
    def _fresh_enough(self, sample: TrainSample, version: int) -> bool:
        limit = self.sp.max_off_policy_steps + (self.sp.regen_every if sample.role == "designer" else 0)
        return version - sample.adapter_version <= limit

    def _train(self, samples: list[TrainSample]) -> dict[str, float]:
        failpoint("learn")  # inside the learner's worker thread, before the update
        assert self.learner is not None
        return self.learner.train_step(samples)

    async def _probe_adapter(self, step: int, version: int) -> dict[str, float]:
        """Run the adapter probe after a load; a mismatch is an event and a warning, and
        ``engine.probe.stop_after`` of them in a row stop the run."""
        assert self.adapter_probe is not None
        result = await self.adapter_probe.check(version)
        if result.ok:
            self.probe_failures = 0
            return result.metrics()
        self.probe_failures += 1
        limit = self.cfg.engine.probe.stop_after
        message = f"adapter probe after loading v{version}: {result.problem} ({self.probe_failures} in a row)"
        await self.store.record_event(step, "adapter_mismatch", message)
        self.report(f"warning: {message}")
        if self.probe_failures >= limit and not self.stop_requested:
            stop = (
                f"stopping: {limit} adapter probes in a row failed. Check that the engine loads adapters "
                "(engine.backend; for vLLM: enable_lora, max_lora_rank >= model.lora_rank, that the adapter "
                "folder it is given is the one just written), that engine and learner load the same base "
                "(model.name, model.dtype, model.qlora_serve), and the sampling temperature; "
                "engine.probe.enabled = false turns the check off"
            )
            await self.store.record_event(step, "adapter_stop", stop)
            self.report(stop)
            self.request_stop()
        return result.metrics()

    async def consume(self, batch: Batch) -> dict[str, float]:
        t0 = time.perf_counter()
        metrics = dict(batch.metrics)
        version = self.learner.version if self.learner else self.engine.adapter_version
        fresh = [s for s in batch.samples if self._fresh_enough(s, version)]
        dropped = len(batch.samples) - len(fresh)
        if dropped:
            self.stale_dropped += dropped
            await self.store.record_event(
                batch.step, "stale_drop", f"dropped {dropped} samples older than the staleness bound"
            )
        if not self.sp.train_designer:
            fresh = [s for s in fresh if s.role == "agent"]
        if self.learner is not None and fresh:
            stats = await anyio.to_thread.run_sync(CPU_SHARE.staged(self._train), fresh)
            metrics.update({k: float(v) for k, v in stats.items() if isinstance(v, int | float)})
            if self.learner.version != version:  # a step with nothing to train on makes no new version
                version = self.learner.version
                path = self.run_dir / "adapters" / f"v{version}"
                await anyio.to_thread.run_sync(CPU_SHARE.staged(self.learner.save_adapter), path)
                await self.loop_eval.before_publish()  # the base model is scored before any adapter goes live
                await self.engine.load_adapter(version, str(path))
                if self.adapter_probe is not None:
                    metrics.update(await self._probe_adapter(batch.step, version))
                await anyio.to_thread.run_sync(prune_adapters, self.run_dir, self.cfg.run.keep_adapters, {version})
        self.loop_eval.request(batch.step)  # never waits: skipped (and counted) while one is running
        self.archive.request(batch.step)  # the same: never waits
        metrics["stale_dropped"] = float(self.stale_dropped)
        metrics["adapter_version"] = float(self.engine.adapter_version)
        metrics["time_learn_s"] = time.perf_counter() - t0
        metrics["samples_offered"] = float(len(fresh))
        await self.store.record_step(
            batch.step, self.engine.adapter_version, metrics, wall_s=time.perf_counter() - batch.started
        )
        if self.checkpointer is not None and self._checkpoint_due(batch.step):
            await self.checkpointer(batch.step, batch.snapshot)
            self._unsaved = None
        else:
            self._unsaved = batch
        if (batch.step + 1) % self.cfg.log.every == 0:
            if "console" in self.cfg.log.backends:
                self.report(format_step_line(batch.step, metrics, self.learner is not None))
            if "jsonl" in self.cfg.log.backends:
                async with await anyio.open_file(self.run_dir / "metrics.jsonl", "a") as fh:
                    await fh.write(metrics_json_line(batch.step, metrics))
            tracked = namespaced(metrics)
            for sink in self.trackers:
                await anyio.to_thread.run_sync(sink.log, shown(batch.step), tracked)
        return metrics

    def close_trackers(self) -> None:
        """Flush and close the tracking sinks (idempotent)."""
        trackers, self.trackers = self.trackers, []
        for sink in trackers:
            sink.close()

    # -- drivers --------------------------------------------------------------------------------
    async def run(self, *, sync: bool = False, lead: int | None = None) -> int:
        """Run to ``run.max_steps`` (or until stopped); returns the number of steps done.

        ``lead`` is how many steps the producer may run ahead of the learner (default
        ``max_off_policy_steps``, which keeps every agent sample inside the staleness bound;
        tests set it higher to exercise the drop path).
        """
        done = 0
        lead = self.sp.max_off_policy_steps if lead is None else lead
        overlap = not sync and lead >= 1
        async with anyio.create_task_group() as root:
            root.start_soon(self._watch_signals, root.cancel_scope)
            root.start_soon(self._heartbeat)
            root.start_soon(self.loop_eval.serve, self.start_step)
            root.start_soon(self.archive.serve, self.start_step)
            if overlap:
                send, receive = anyio.create_memory_object_stream[Batch](lead - 1)

                async def producer() -> None:
                    async with send:
                        for step in range(self.start_step, self.cfg.run.max_steps):
                            if self.stop_requested:
                                break
                            await self.paused.wait()
                            await send.send(await self.produce(step))

                async def consumer() -> None:
                    nonlocal done
                    async with receive:
                        async for batch in receive:
                            await self.consume(batch)
                            done += 1
                    await self.loop_eval.finish(drain=not self.stop_requested)
                    await self.archive.finish(drain=not self.stop_requested)
                    root.cancel_scope.cancel()

                root.start_soon(producer)
                root.start_soon(consumer)
            else:
                for step in range(self.start_step, self.cfg.run.max_steps):
                    if self.stop_requested:
                        break
                    await self.paused.wait()
                    await self.consume(await self.produce(step))
                    done += 1
                await self.loop_eval.finish(drain=not self.stop_requested)
                await self.archive.finish(drain=not self.stop_requested)
                root.cancel_scope.cancel()
        if done and not self.stop_requested and self.start_step + done >= self.cfg.run.max_steps:
            with anyio.CancelScope(shield=True):
                await self.generator.score_last_generation(self.cfg.run.max_steps - 1)
        if self.stop_requested and self._unsaved is not None and self.checkpointer is not None:
            with anyio.CancelScope(shield=True):  # a clean stop leaves nothing to redo
                snapshot = self._unsaved.snapshot
                snapshot.setdefault("env_stats", await self.store.environment_stats())
                await self.checkpointer(self._unsaved.step, snapshot)
                self._unsaved = None
        return done

    async def _heartbeat(self) -> None:
        """Tell watchers this process still owns the run (see ``Store.heartbeat``)."""
        while True:
            if self.store.run_id is not None:
                await self.store.heartbeat()
            await anyio.sleep(HEARTBEAT_EVERY_S)

    async def _watch_signals(self, scope: anyio.CancelScope) -> None:
        """Ctrl-C / SIGTERM: stop after the step in flight (its checkpoint is written)."""
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _sig in signals:
                    if self.stop_requested:
                        scope.cancel()  # second Ctrl-C: stop now; the last checkpoint stands
                        return
                    # async mode: the producer's step in flight is finished and trained too (nothing wasted)
                    self.report(
                        "stopping after the current step, and the next one if its rollouts are under way "
                        "(Ctrl-C again to stop now)"
                    )
                    self.request_stop()
        except (NotImplementedError, ValueError, RuntimeError):  # not the main thread (tests, TUI worker)
            await anyio.sleep_forever()


def metrics_json_line(step: int, metrics: dict[str, float]) -> str:
    """One JSON object per line, ``step`` counted from 1 as on the console (``step`` is the
    internal 0-based index); NaN (not measured) becomes null, as in the database."""
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    return json.dumps({"step": shown(step), **clean}) + "\n"


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def format_step_line(step: int, m: dict[str, float], learning: bool) -> str:
    """One console line per step."""
    learn = f"loss {_fmt(m.get('loss'), '.4f')} v{int(m.get('adapter_version', 0))}" if learning else "learner off"
    return (
        f"step {shown(step):>4} | valid {_fmt(m.get('valid_fraction'))} | envs {int(m.get('n_envs', 0))} "
        f"| win {_fmt(m.get('plain_return_mean'))} hint {_fmt(m.get('hint_return_mean'))} "
        f"| regret {_fmt(m.get('regret_mean'))} | learnable {_fmt(m.get('learnable_fraction'))} "
        f"| {learn} | gen {_fmt(m.get('tokens_per_s'), '.0f')} tok/s "
        f"| design {_fmt(m.get('time_design_s'), '.0f')}s play {_fmt(m.get('time_play_s'), '.0f')}s learn {_fmt(m.get('time_learn_s'), '.0f')}s "
        f"| stale {int(m.get('stale_dropped', 0))}"
    )
