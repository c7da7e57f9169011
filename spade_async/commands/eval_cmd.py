"""``spade-async eval [RUN_DIR]``: score the base model and a run's adapters on held-out suites.

Why a command of its own: a run's own curves are measured on its training games and seeds;
this plays held-out seeds (and reasoning-gym, or any folder of environments) with the base
model and with each adapter on the same items, and prints the paired delta with its 95%
interval. Results also go into the run's database (``evals`` table) so ``report`` and the TUI
show them. Progress goes to stderr, so ``--json`` output on stdout stays clean.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import click

from spade_async.commands.errors import CONFIG_FILE, CommandFailed, UsageProblem, run_folder
from spade_async.config import Config, ConfigError, load_config


def _load_config(run_dir: Path | None, config_path: str | None, overrides: tuple[str, ...]) -> Config:
    if config_path is None and run_dir is None:
        raise UsageProblem("give a RUN_DIR (a training run folder) or --config CONFIG (base model only)")
    if config_path is None:
        run_folder(run_dir, CONFIG_FILE)  # type: ignore[arg-type]  # checked above
    path = Path(config_path) if config_path else run_dir / CONFIG_FILE  # type: ignore[operator]
    if not path.is_file():
        raise UsageProblem(f"--config {config_path}: no such file")
    try:
        return load_config(path, list(overrides))
    except ConfigError as exc:
        raise UsageProblem("; ".join(exc.problems)) from None


@click.command("eval")
@click.argument("run_dir", required=False, type=click.Path())
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config whose model and sampling to use (default: RUN_DIR/config.toml).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config value, e.g. engine.agent.temperature=0.7.")
@click.option("--adapter", "adapters", multiple=True, metavar="PATH", help="A PEFT adapter folder (or a checkpoint folder) to compare with the base. Repeatable.")
@click.option("--step", "steps", multiple=True, metavar="N|last", help="The adapter of the checkpoint after step N (counted from 1, as on the console): RUN_DIR/checkpoints/step_N. Repeatable. Default: the newest checkpoint.")
@click.option("--suite", "suites", multiple=True, default=("games",), show_default=True, metavar="NAME[:ARG]",
              help="games, games:easy, games:standard, reasoning_gym[:FAMILIES], envs:FOLDER. Repeatable.")
@click.option("--episodes", type=click.IntRange(min=1), default=16, show_default=True, help="Held-out episodes per environment.")
@click.option("--split", type=click.Choice(["test", "dev"]), default="test", show_default=True, help="Held-out seed range; tune on dev, report test.")
@click.option("--rg-size", type=click.IntRange(min=1), default=16, show_default=True, help="Problems per reasoning-gym dataset.")
@click.option("--rg-max-new-tokens", type=click.IntRange(min=1), default=192, show_default=True, help="Answer length limit for reasoning-gym.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Items scored at once (default: engine.batch_size).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--no-save", is_flag=True, help="Do not write the results into RUN_DIR's database.")
@click.option("--tasks/--no-tasks", "per_task", default=True, show_default=True, help="Show per-task (per-game) lines.")
def eval_command(run_dir: str | None, config_path: str | None, overrides: tuple[str, ...], adapters: tuple[str, ...],
                 steps: tuple[str, ...], suites: tuple[str, ...], episodes: int, split: str, rg_size: int,
                 rg_max_new_tokens: int, concurrency: int | None, as_json: bool, no_save: bool, per_task: bool) -> None:
    """Score the base model and adapters of RUN_DIR on held-out suites (paired delta, 95% interval)."""
    run = run_folder(run_dir) if run_dir else None  # before the heavy imports: a typo answers at once
    cfg = _load_config(run, config_path, overrides)
    from spade_async.eval.models import ModelSpecError, resolve_models
    from spade_async.eval.suites import SuiteError, build_suite

    try:
        models = resolve_models(run, adapters, steps)
        options = {"episodes": episodes, "split": split, "rg_size": rg_size, "rg_max_new_tokens": rg_max_new_tokens}
        built = [build_suite(spec, options) for spec in suites]
    except (ModelSpecError, SuiteError) as exc:
        raise UsageProblem(str(exc)) from None
    db = run / "run.sqlite" if run is not None and not no_save else None
    if db is not None and not db.is_file():
        db = None
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from spade_async.launch import KNOWN_ERRORS, innermost

    try:
        payload = anyio.run(lambda: _evaluate(cfg, built, models, db, concurrency or cfg.engine.batch_size,
                                              per_task=per_task, as_json=as_json))
    except Exception as group:
        inner = innermost(group)
        if isinstance(inner, KNOWN_ERRORS):
            raise CommandFailed(str(inner)) from None
        raise
    if as_json:
        click.echo(json.dumps(payload, indent=1))


async def _evaluate(cfg: Config, suites: list[Any], models: list[Any], db: Path | None, concurrency: int,
                    *, per_task: bool, as_json: bool) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from spade_async.engine.embedded import resolve_model_path
    from spade_async.eval.runner import evaluate, summarise
    from spade_async.eval.table import results_json, results_table
    from spade_async.launch import build_engine, preflight
    from spade_async.memory.store import Store
    from spade_async.sandbox.pool import SandboxPool

    err = Console(stderr=True)
    placement = preflight(cfg)
    t_start = time.perf_counter()
    err.print(f"loading model {cfg.model.name} ...")
    model_path = await anyio.to_thread.run_sync(resolve_model_path, cfg.model.name)
    engine = await anyio.to_thread.run_sync(build_engine, cfg, model_path, placement)
    t_loaded = time.perf_counter()
    pool = await SandboxPool.start(cfg.sandbox) if any(s.needs_sandbox for s in suites) else None
    try:
        n_items = sum(len(s.items()) for s in suites)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=err, transient=False) as bar:
            tasks = {m.label: bar.add_task(f"{m.label:>10}", total=n_items) for m in models}

            def progress(label: str, done: int, total: int) -> None:
                bar.update(tasks[label], completed=done)
                if not err.is_terminal and (done == total or done * 10 // total != (done - 1) * 10 // total):
                    # no live bar when stderr is a file or pipe: a line per 10% instead
                    err.print(f"{label}: {done}/{total} items, {time.perf_counter() - t_loaded:.0f}s")

            table, seconds = await evaluate(engine, pool, cfg, suites, models, concurrency=concurrency, progress=progress)
    finally:
        if pool is not None:
            await pool.aclose()
        if hasattr(engine, "aclose"):
            await engine.aclose()
    rows = summarise(table, models)
    eval_id = uuid.uuid4().hex[:12]
    if db is not None:
        async with await Store.open(db) as store:
            await store.record_evals([{**r.as_dict(), "eval_id": eval_id, "ci_low": r.low, "ci_high": r.high,
                                       "seconds": seconds[r.model]} for r in rows])
    if db is not None:
        _track(cfg, db.parent, rows, models, err)
    timing: dict[str, Any] = {"load_s": round(t_loaded - t_start, 2), "per_model_s": {k: round(v, 2) for k, v in seconds.items()},
              "total_s": round(time.perf_counter() - t_start, 2)}
    if not as_json:
        out = Console()
        out.print(results_table(rows, per_task=per_task, title=f"held-out evaluation {eval_id}"))
        out.print(f"model load {timing['load_s']}s; " + ", ".join(f"{k} {v}s" for k, v in timing["per_model_s"].items())
                  + (f"; saved to {db}" if db is not None else ""))
    return results_json(rows, eval_id=eval_id, model=cfg.model.name, timing=timing,
                        suites=[s.name for s in suites], saved_to=str(db) if db else None)


def _track(cfg: Config, run_dir: Path, rows: list[Any], models: list[Any], err: Any) -> None:
    """Send the figures to the run's tracking sinks (``eval/<model>/<suite>/<metric>...``), each
    adapter at its checkpoint's step; a sink failure is a warning, the results are saved already."""
    from spade_async.steps import shown
    from spade_async.tracking.names import eval_metrics
    from spade_async.tracking.sinks import TRACKING_BACKENDS, make_sinks

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
