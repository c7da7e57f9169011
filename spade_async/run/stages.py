"""Building what the pipeline drives: the curriculum and generator, the play round with its
audits and scorer, the adapter publisher, the step log and the evaluations beside the stages.

Why apart from the pipeline: the pipeline drives one step after another and should not know
how each collaborator is made or which config section it reads; building them all in its
constructor made it a hundred lines that carried every collaborator of the run. Here each one
is made from its own section (``selfplay``, ``engine.agent``, ``engine.probe``, ``log``,
``run``) where it has one; the stages of lower layers (generator, steering, evaluations) take
the whole config as they always have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from spade_async.adapter_check import AdapterProbe
from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.envs.seeds import SeedEnv
from spade_async.eval.archive.player import ArchiveEval
from spade_async.eval.archive.sample import ArchiveSample
from spade_async.eval.inloop import InLoopEval
from spade_async.learner.base import Learner
from spade_async.memory.embed import TextEmbedder
from spade_async.memory.store import Store
from spade_async.run.audits import PlayAudits
from spade_async.run.checkpointer import Checkpointer
from spade_async.run.control import RunControl
from spade_async.run.plays import PlayRound
from spade_async.run.publisher import AdapterPublisher
from spade_async.run.replay import WarmStartReplay
from spade_async.run.scoring import PlayScorer
from spade_async.run.step_log import StepLog
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.generation import EnvGenerator
from spade_async.selfplay.steering import Steering
from spade_async.tracking.sinks import make_sinks
from spade_async.warmstart.library import warm_start_library_keys

Reporter = Callable[[str], None]


@dataclass(frozen=True)
class Handles:
    """What a run has opened before its stages are built (the launcher's, closed by it)."""

    engine: Engine
    pool: EnvPool
    store: Store
    learner: Learner | None
    corpus: Corpus
    run_dir: Path
    report: Reporter


@dataclass
class Stages:
    """The pipeline's collaborators, each the owner of one part of a step."""

    curriculum: Curriculum
    generator: EnvGenerator
    steering: Steering
    """Queued steering actions (retire, pin, inject, band, designer share), applied between steps."""
    plays: PlayRound
    scorer: PlayScorer
    publisher: AdapterPublisher | None
    """None without a learner (nothing is trained, nothing published)."""
    step_log: StepLog
    archive_sample: ArchiveSample
    """The fixed sample of retired environments the archive rounds replay (in the snapshot)."""
    loop_eval: InLoopEval
    """Held-out evaluation every ``eval.every`` steps, beside the two stages (spade_async.eval.inloop)."""
    archive: ArchiveEval
    """Retired environments replayed every ``eval.archive_every`` steps (spade_async.eval.archive)."""
    checkpointer: Checkpointer
    replay: WarmStartReplay | None = None
    """Warm-start pairs trained after each update (``warmstart.replay``; None: off)."""


def build_stages(
    cfg: Config,
    run: Handles,
    *,
    control: RunControl,
    checkpointer: Checkpointer,
    seeds: list[SeedEnv],
    embedder: TextEmbedder | None = None,
    probe: AdapterProbe | None = None,
) -> Stages:
    """Every collaborator of the pipeline, wired to ``run``'s handles and to ``control``."""
    step_log = StepLog(
        cfg.log,
        run_dir=run.run_dir,
        sinks=make_sinks(
            cfg.log.backends,
            run_dir=run.run_dir,
            project=cfg.log.project or cfg.run.name,
            name=cfg.run.name,
            config=cfg.model_dump(mode="json"),
        ),
        report=run.report,
        learning=run.learner is not None,
    )
    archive_sample = ArchiveSample(cfg.eval.archive_size, cfg.run.seed)
    loop_eval, archive = _evaluations(cfg, run, archive_sample, step_log, control)
    curriculum = Curriculum(
        cfg.selfplay,
        seed=cfg.run.seed,
        designer_temperature=cfg.engine.designer.temperature,
        n_agent_samples_per_env=cfg.selfplay.plays,
    )

    def archive_retirees(step: int, retired: list[LiveEnv]) -> None:
        """Retirees join the archive's fixed sample (only when archive rounds are on)."""
        if archive.enabled:
            archive_sample.offer(step, retired)

    generator = EnvGenerator(
        cfg,
        engine=run.engine,
        pool=run.pool,
        store=run.store,
        corpus=run.corpus,
        curriculum=curriculum,
        seeds=seeds,
        embedder=embedder,
        report=run.report if "console" in cfg.log.backends else None,
        library_keys=warm_start_library_keys(cfg),
        on_retire=archive_retirees,
    )
    plays, scorer = _play_stages(cfg, run, curriculum, generator, control)
    replay = WarmStartReplay(cfg, run.engine) if cfg.warmstart.replay and run.learner is not None else None
    return Stages(
        replay=replay,
        curriculum=curriculum,
        generator=generator,
        steering=Steering(
            cfg, store=run.store, pool=run.pool, curriculum=curriculum, write_stats=generator.write_stats
        ),
        plays=plays,
        scorer=scorer,
        publisher=_publisher(cfg, run, control, probe, loop_eval),
        step_log=step_log,
        archive_sample=archive_sample,
        loop_eval=loop_eval,
        archive=archive,
        checkpointer=checkpointer,
    )


def _evaluations(
    cfg: Config, run: Handles, sample: ArchiveSample, step_log: StepLog, control: RunControl
) -> tuple[InLoopEval, ArchiveEval]:
    """The in-loop evaluation and the archive rounds: beside the stages, paused with them, logging
    to the run's sinks."""
    loop_eval = InLoopEval(
        cfg,
        engine=run.engine,
        pool=run.pool,
        store=run.store,
        run_dir=run.run_dir,
        report=run.report,
        sinks=lambda: step_log.sinks,
        gate=control.wait,
    )
    archive = ArchiveEval(
        cfg,
        engine=run.engine,
        pool=run.pool,
        store=run.store,
        sample=sample,
        report=run.report,
        sinks=lambda: step_log.sinks,
        gate=control.wait,
    )
    return loop_eval, archive


def _play_stages(
    cfg: Config, run: Handles, curriculum: Curriculum, generator: EnvGenerator, control: RunControl
) -> tuple[PlayRound, PlayScorer]:
    """The play round (with its audits, sharing its concurrency limit) and its scorer."""
    limiter = anyio.CapacityLimiter(cfg.sandbox.max_children)
    audits = PlayAudits(
        cfg.selfplay, store=run.store, curriculum=curriculum, write_stats=generator.write_stats, limiter=limiter
    )
    plays = PlayRound(
        cfg.selfplay,
        cfg.engine.agent,
        run_seed=cfg.run.seed,
        engine=run.engine,
        curriculum=curriculum,
        audits=audits,
        limiter=limiter,
        gate=control.wait,
    )
    scorer = PlayScorer(
        cfg.selfplay,
        cfg.engine.agent,
        store=run.store,
        curriculum=curriculum,
        write_stats=generator.write_stats,
        audits=audits,
    )
    return plays, scorer


def _publisher(
    cfg: Config, run: Handles, control: RunControl, probe: AdapterProbe | None, loop_eval: InLoopEval
) -> AdapterPublisher | None:
    if run.learner is None:
        return None
    return AdapterPublisher(
        run.run_dir,
        engine=run.engine,
        learner=run.learner,
        store=run.store,
        control=control,
        report=run.report,
        keep=cfg.run.keep_adapters,
        probe=probe,
        probe_cfg=cfg.engine.probe,
        before_publish=loop_eval.before_publish,
    )
