"""``spade-async eval [RUN_DIR]``: score the base model and a run's adapters on held-out suites.

Why a command of its own: a run's own curves are measured on its training games and seeds;
this plays held-out seeds (and reasoning-gym, or any folder of environments) with the base
model and with each adapter on the same items, and prints the paired delta with its 95%
interval. Results also go into the run's database (``evals`` table) so ``report`` and the TUI
show them. Progress goes to stderr, so ``--json`` output on stdout stays clean.

Cost: before loading anything it prints the plan (``eval.plan``: suites, items, models, what is
cached, an estimated time) and, while scoring, the items left and an estimate of the time left.
The base model's scores are kept in ``RUN_DIR/eval/base_cache`` (``eval.base_cache``) and
reused by every later eval with the same key; ``--fresh-base`` scores it again.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from spade_async.cli.errors import CONFIG_FILE, CommandFailed, UsageProblem, run_folder
from spade_async.config import Config, ConfigError, load_config
from spade_async.config.presets import resolve_config
from spade_async.memory.run_dir import RunDir
from spade_async.util.errors import UserError
from spade_async.util.steps import DB_NAME

if TYPE_CHECKING:
    from spade_async.eval.suites import Suite


def _load_config(run_dir: Path | None, config_path: str | None, overrides: tuple[str, ...]) -> Config:
    if config_path is None and run_dir is None:
        raise UsageProblem("give a RUN_DIR (a training run folder) or --config CONFIG (base model only)")
    try:
        if config_path is None:
            run_folder(run_dir, CONFIG_FILE)  # type: ignore[arg-type]  # checked above
            path = run_dir / CONFIG_FILE  # type: ignore[operator]
        else:
            path = resolve_config(config_path)  # a file, or a preset by name (`tiny`), as `run` takes it
        if not path.is_file():
            raise UsageProblem(f"--config {config_path}: not a file")
        return load_config(path, list(overrides))
    except ConfigError as exc:
        raise UsageProblem("; ".join(exc.problems)) from None


@click.command("eval")
@click.argument("run_dir", required=False, type=click.Path())
@click.option(
    "--config",
    "config_path",
    help="Config (a file or a preset name) whose model and sampling to use (default: RUN_DIR/config.toml).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value, e.g. engine.agent.temperature=0.7.",
)
@click.option(
    "--adapter",
    "adapters",
    multiple=True,
    metavar="PATH",
    help="A PEFT adapter folder (or a checkpoint folder) to compare with the base. Repeatable.",
)
@click.option(
    "--step",
    "steps",
    multiple=True,
    metavar="N|last",
    help="The adapter of the checkpoint after step N (counted from 1, as on the console): RUN_DIR/checkpoints/step_N. Repeatable. Default: the newest checkpoint.",
)
@click.option(
    "--suite",
    "suites",
    multiple=True,
    default=("games",),
    show_default=True,
    metavar="NAME[:ARG]",
    help="games, games:easy, games:standard, reasoning_gym[:FAMILIES], envs:FOLDER, lm_eval:TASK[,TASK] "
    "(lm-eval tasks, a task YAML or folder, or lm_eval:paper; docs/lm_eval.md). Repeatable.",
)
@click.option(
    "--episodes", type=click.IntRange(min=1), default=16, show_default=True, help="Held-out episodes per environment."
)
@click.option(
    "--split",
    type=click.Choice(["test", "dev"]),
    default="test",
    show_default=True,
    help="Held-out seed range; tune on dev, report test.",
)
@click.option(
    "--rg-size", type=click.IntRange(min=1), default=16, show_default=True, help="Problems per reasoning-gym dataset."
)
@click.option(
    "--rg-max-new-tokens",
    type=click.IntRange(min=1),
    default=192,
    show_default=True,
    help="Answer length limit for reasoning-gym.",
)
@click.option(
    "--lm-eval-limit",
    type=click.IntRange(min=1),
    default=None,
    help="Documents per lm-eval task: the first N (default: all).",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=None, help="Items scored at once (default: engine.batch_size)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--no-save", is_flag=True, help="Do not write the results into RUN_DIR's database.")
@click.option("--tasks/--no-tasks", "per_task", default=True, show_default=True, help="Show per-task (per-game) lines.")
@click.option(
    "--fresh-base",
    is_flag=True,
    help="Score the base model again instead of reusing its scores cached in RUN_DIR/eval/base_cache.",
)
def eval_command(
    run_dir: str | None,
    config_path: str | None,
    overrides: tuple[str, ...],
    adapters: tuple[str, ...],
    steps: tuple[str, ...],
    suites: tuple[str, ...],
    episodes: int,
    split: str,
    rg_size: int,
    rg_max_new_tokens: int,
    lm_eval_limit: int | None,
    concurrency: int | None,
    as_json: bool,
    no_save: bool,
    per_task: bool,
    fresh_base: bool,
) -> None:
    """Score the base model and adapters of RUN_DIR on held-out suites (paired delta, 95% interval)."""
    run = run_folder(run_dir) if run_dir else None  # before the heavy imports: a typo answers at once
    if run is not None:  # one line before any item is scored or eval/ is written
        folder = RunDir(run)
        if folder.db.is_file():
            folder.check_database()  # damaged
        # eval/ (base cache, timing) and the results rows are written after the scoring
        folder.check_writable("eval", "eval/base_cache", *([] if no_save else [DB_NAME]))
    cfg = _load_config(run, config_path, overrides)
    from spade_async.eval.models import ModelSpecError, resolve_models
    from spade_async.eval.suites import SuiteError, build_suite

    try:
        models = resolve_models(run, adapters, steps)
        options = {
            "episodes": episodes,
            "split": split,
            "rg_size": rg_size,
            "rg_max_new_tokens": rg_max_new_tokens,
            "lm_eval_limit": lm_eval_limit,
        }
        built = [build_suite(spec, options) for spec in suites]
    except (ModelSpecError, SuiteError) as exc:
        raise UsageProblem(str(exc)) from None
    db = run / DB_NAME if run is not None and not no_save else None
    if db is not None and not db.is_file():
        db = None
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from spade_async.run.assemble import innermost

    try:
        payload = anyio.run(
            lambda: _evaluate(
                cfg,
                built,
                models,
                db,
                concurrency or cfg.engine.batch_size,
                per_task=per_task,
                as_json=as_json,
                run_dir=run,
                fresh_base=fresh_base,
            )
        )
    except Exception as group:
        inner = innermost(group)
        if isinstance(inner, UserError):
            raise CommandFailed(str(inner)) from None
        raise
    if as_json:
        click.echo(json.dumps(payload, indent=1))


@dataclass
class _Plan:
    """What one evaluation will do: each suite's items and base-cache key, which suites' base
    scores come from the cache, the phases (one per model) and the running time estimate."""

    items: list[list[Any]]
    cache: Any  # BaseCache | None
    keys: list[dict[str, Any] | None]
    cached: dict[int, Any]  # suite index -> its cached base scores
    phases: list[Any]
    eta: Any  # eval.plan.Eta
    rate_source: str
    """Where the prior time per item came from (printed with the estimate)."""
    note: str
    """What the plan says about the base cache."""

    def scored(self, suites: list[Suite], n_models: int) -> list[Suite]:
        """The suites some model scores (the base model's cached ones only when adapters follow)."""
        return [s for i, s in enumerate(suites) if i not in self.cached or n_models > 1]


async def _evaluate(
    cfg: Config,
    suites: list[Suite],
    models: list[Any],
    db: Path | None,
    concurrency: int,
    *,
    per_task: bool,
    as_json: bool,
    run_dir: Path | None = None,
    fresh_base: bool = False,
) -> dict[str, Any]:
    from rich.console import Console

    from spade_async.eval.plan import save_timing
    from spade_async.eval.runner import summarise
    from spade_async.eval.table import results_json

    err = Console(stderr=True)
    t_start = time.perf_counter()
    plan = _make_plan(cfg, suites, models, concurrency, run_dir=run_dir, fresh_base=fresh_base)
    _print_plan(cfg, suites, plan, concurrency, err)
    table, seconds, t_loaded = await _score(cfg, suites, models, plan, concurrency, err)
    if run_dir is not None:
        save_timing(run_dir, _timing(table, seconds, models, plan))
    rows = summarise(table, models)
    eval_id = uuid.uuid4().hex[:12]
    if db is not None:
        await _save(db, rows, seconds, eval_id)
        _track(cfg, db.parent, rows, models, err)
    timing_out: dict[str, Any] = {
        "load_s": round(t_loaded - t_start, 2),
        "per_model_s": {k: round(v, 2) for k, v in seconds.items()},
        "total_s": round(time.perf_counter() - t_start, 2),
        "base_cached": [suites[i].name for i in sorted(plan.cached)],
    }
    if not as_json:
        _print_results(rows, timing_out, models, db, eval_id, per_task=per_task)
    return results_json(
        rows,
        eval_id=eval_id,
        model=cfg.model.name,
        timing=timing_out,
        suites=[s.name for s in suites],
        saved_to=str(db) if db else None,
    )


def _make_plan(
    cfg: Config, suites: list[Suite], models: list[Any], concurrency: int, *, run_dir: Path | None, fresh_base: bool
) -> _Plan:
    """What is cached, what will be scored, about how long it takes."""
    from spade_async.eval.base_cache import BaseCache, base_key
    from spade_async.eval.plan import Eta, Phase, load_timing, prior_seconds_per_item, training_seconds_per_episode

    items = [s.items() for s in suites]
    cache = BaseCache(run_dir) if run_dir is not None else None
    keys = [base_key(cfg, s, its, cfg.engine.max_model_len) for s, its in zip(suites, items, strict=True)]
    cached = (
        {}
        if cache is None or fresh_base
        else {i: hit for i, k in enumerate(keys) if (hit := cache.load(k)) is not None}
    )
    phases = [
        Phase(
            models[0].label,
            sum(len(its) for i, its in enumerate(items) if i not in cached),
            [suites[i].name for i in sorted(cached)],
        )
    ]
    phases += [Phase(m.label, sum(len(its) for its in items)) for m in models[1:]]
    prior, source = prior_seconds_per_item(
        [s for i, s in enumerate(suites) if i not in cached or len(models) > 1],
        load_timing(run_dir),
        training_seconds_per_episode(run_dir, cfg),
    )
    eta = Eta(phases, concurrency=concurrency, prior_s_per_item=prior)
    if cache is None:
        note = "base scores are not cached without a RUN_DIR"
    elif fresh_base:
        note = "--fresh-base: the base model is scored again and its cache replaced"
    else:
        uncacheable = [s.name for s, k in zip(suites, keys, strict=True) if k is None]
        note = f"base scores cached in {cache.root}" + (
            f"; not cacheable: {', '.join(uncacheable)}" if uncacheable else ""
        )
    return _Plan(items, cache, keys, cached, phases, eta, source, note)


def _print_plan(cfg: Config, suites: list[Suite], plan: _Plan, concurrency: int, err: Any) -> None:
    from spade_async.eval.plan import plan_lines, suite_line

    for line in plan_lines(
        [suite_line(s, len(its), cfg) for s, its in zip(suites, plan.items, strict=True)],
        plan.phases,
        concurrency=concurrency,
        eta_s=plan.eta.remaining(),
        rate_source=plan.rate_source,
        cache_note=plan.note,
    ):
        err.print(line, highlight=False, soft_wrap=True)


async def _score(
    cfg: Config, suites: list[Suite], models: list[Any], plan: _Plan, concurrency: int, err: Any
) -> tuple[list[Any], dict[str, float], float]:
    """Load the model (and the sandbox where a scored suite plays environments) and score every
    suite with every model: (the table, seconds per model, when the model had loaded)."""
    from spade_async.engine.embedded import resolve_model_path
    from spade_async.eval.runner import evaluate
    from spade_async.run.assemble import build_engine, preflight
    from spade_async.sandbox.pool import SandboxPool

    placement = preflight(cfg, trains_on_samples=False)  # a fixed adapter: merged is fine
    err.print(f"loading model {cfg.model.name} ...")
    model_path = await anyio.to_thread.run_sync(resolve_model_path, cfg.model.name)
    engine = await anyio.to_thread.run_sync(build_engine, cfg, model_path, placement)
    t_loaded = time.perf_counter()
    needs_pool = any(s.needs_sandbox for s in plan.scored(suites, len(models)))
    pool = await SandboxPool.start(cfg.sandbox) if needs_pool else None

    def on_base(scored: list[Any], seconds: float) -> None:
        if plan.cache is None:
            return
        n = sum(len(t.items) for t in scored)
        for t in scored:
            i = next(j for j, s in enumerate(suites) if s is t.suite)
            plan.cache.save(plan.keys[i], t.scores[models[0].label], seconds * len(t.items) / max(n, 1))

    try:
        with _progress_bar(err) as bar:
            progress = _progress_reporter(bar, plan, err, t_loaded)
            table, seconds = await evaluate(
                engine,
                pool,
                cfg,
                suites,
                models,
                concurrency=concurrency,
                progress=progress,
                cached_base={i: hit.scores for i, hit in plan.cached.items()},
                on_base=on_base,
            )
    finally:
        if pool is not None:
            await pool.aclose()
        await engine.aclose()
    return table, seconds, t_loaded


def _progress_bar(err: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        console=err,
        transient=False,
    )


def _progress_reporter(bar: Any, plan: _Plan, err: Any, t_loaded: float) -> Callable[[str, int, int], None]:
    """``progress(label, done, total)`` for the runner: the bar (one task per model) and the
    time left; where stderr is no terminal, a line per 10% (or 30 s) instead of a live bar."""
    from spade_async.eval.plan import format_seconds

    tasks = {
        p.label: bar.add_task(f"{p.label:>10}", total=max(p.items, 1), eta="", visible=p.items > 0) for p in plan.phases
    }
    last_line = [time.perf_counter()]

    def progress(label: str, done: int, total: int) -> None:
        plan.eta.update(label, done)
        left = f"{plan.eta.items_left()} items left, about {format_seconds(plan.eta.remaining())}"
        for t in tasks.values():
            bar.update(t, eta=left)
        bar.update(tasks[label], completed=done)
        now = time.perf_counter()
        if not err.is_terminal and (
            done == total or now - last_line[0] >= 30.0 or done * 10 // total != (done - 1) * 10 // total
        ):
            # no live bar when stderr is a file or pipe: a line per 10% (or 30 s) instead
            last_line[0] = now
            err.print(f"{label}: {done}/{total} items, {now - t_loaded:.0f}s; {left}", highlight=False, soft_wrap=True)

    return progress


def _timing(table: list[Any], seconds: dict[str, float], models: list[Any], plan: _Plan) -> dict[str, float]:
    """Seconds per item of each suite a model scored (the base model's cached suites left out)."""
    timing = {}
    for label, secs in seconds.items():
        scored = [t for i, t in enumerate(table) if label != models[0].label or i not in plan.cached]
        n = sum(len(t.items) for t in scored)
        if n:
            timing.update({t.suite.name: secs / n for t in scored})
    return timing


async def _save(db: Path, rows: list[Any], seconds: dict[str, float], eval_id: str) -> None:
    from spade_async.memory.store import Store

    async with await Store.open(db) as store:
        await store.record_evals(
            [
                {**r.as_dict(), "eval_id": eval_id, "ci_low": r.low, "ci_high": r.high, "seconds": seconds[r.model]}
                for r in rows
            ]
        )


def _print_results(
    rows: list[Any],
    timing_out: dict[str, Any],
    models: list[Any],
    db: Path | None,
    eval_id: str,
    *,
    per_task: bool,
) -> None:
    from rich.console import Console

    from spade_async.eval.table import results_table

    out = Console()
    out.print(results_table(rows, per_task=per_task, title=f"held-out evaluation {eval_id}"))
    base_note = f" (cached: {', '.join(timing_out['base_cached'])})" if timing_out["base_cached"] else ""
    out.print(
        f"model load {timing_out['load_s']}s; "
        + ", ".join(
            f"{k} {v}s{base_note if k == models[0].label else ''}" for k, v in timing_out["per_model_s"].items()
        )
        + (f"; saved to {db}" if db is not None else "")
    )


def _track(cfg: Config, run_dir: Path, rows: list[Any], models: list[Any], err: Any) -> None:
    """Send the figures to the run's tracking sinks (``eval/<model>/<suite>/<metric>...``), each
    adapter at its checkpoint's step; a sink failure is a warning, the results are saved already."""
    from spade_async.tracking.names import eval_metrics
    from spade_async.tracking.sinks import TRACKING_BACKENDS, make_sinks
    from spade_async.util.steps import shown

    backends = [b for b in cfg.log.backends if b in TRACKING_BACKENDS]
    if not backends:
        return
    try:
        sinks = make_sinks(backends, run_dir=run_dir, project=cfg.log.project or cfg.run.name, name=cfg.run.name)
        try:
            for model in models:
                figures = eval_metrics(r for r in rows if r.model == model.label)
                if figures:
                    for sink in sinks:
                        sink.log(shown(model.step) if model.step is not None else 0, figures)
        finally:
            for sink in sinks:
                sink.close()
    except Exception as exc:  # tracking is a copy; never lose the evaluation over it
        err.print(f"warning: could not log to {', '.join(backends)}: {exc}")
