"""``spade-async export adapter|envs RUN_DIR OUT`` and ``export lineage RUN_DIR``: take a run's
adapter, environments or lineage out.

Why a command group: the adapter and the generated curriculum are what a run leaves behind;
they go out in formats other tools read (a PEFT folder or a plain transformers model; a
folder of environment files registered with gymnasium; the tree of mutations as JSON).
"""

from __future__ import annotations

from pathlib import Path

import click

from spade_async.cli.errors import (
    CONFIG_FILE,
    DB_FILE,
    CommandFailed,
    UsageProblem,
    run_folder,
)
from spade_async.memory.run_dir import refuse_output
from spade_async.util.errors import UserError


def _run_dir(path: str) -> Path:
    return run_folder(path, DB_FILE, CONFIG_FILE)


@click.group()
def export() -> None:
    """Export a run's adapter, its environments or its lineage."""


@export.command("adapter")
@click.argument("run_dir", type=click.Path())
@click.argument("out", type=click.Path(file_okay=False))
@click.option(
    "--step",
    default="last",
    show_default=True,
    metavar="N|last",
    help="The checkpoint after step N (counted from 1, as on the console): checkpoints/step_N.",
)
@click.option(
    "--merge", is_flag=True, help="Merge into the base weights (+ tokenizer): loadable by transformers alone."
)
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def export_adapter_cmd(run_dir: str, out: str, step: str, merge: bool, force: bool) -> None:
    """Write the adapter of RUN_DIR (a PEFT folder, or merged weights with --merge) to OUT."""
    run = _run_dir(run_dir)  # before the heavy imports: a typo answers at once
    refuse_output(Path(out), run)  # and an output that would touch a run
    from spade_async.export.adapter import ExportError, export_adapter

    try:
        manifest = export_adapter(run, Path(out), step=step, merge=merge, force=force)
    except ExportError as exc:
        raise UsageProblem(str(exc)) from None
    except UserError as exc:
        raise CommandFailed(str(exc)) from None
    kind = "merged model" if merge else "PEFT adapter"
    click.echo(f"wrote the {kind} of step {manifest['step']} to {out}")


@export.command("envs")
@click.argument("run_dir", type=click.Path())
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--top", type=click.IntRange(min=1), default=None, help="Keep the best N after filtering (see --sort).")
@click.option(
    "--sort",
    type=click.Choice(["regret", "designer_reward", "learnable", "plays", "newest"]),
    default="regret",
    show_default=True,
    help="Order before --top; learnable = win rate closest to 0.5.",
)
@click.option("--skill", "skills", multiple=True, help="Only this skill (repeatable).")
@click.option("--min-win-rate", type=click.FloatRange(0, 1), default=None)
@click.option("--max-win-rate", type=click.FloatRange(0, 1), default=None)
@click.option(
    "--min-plays",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Only envs played at least this often.",
)
@click.option("--include-seeds", is_flag=True, help="Also export the built-in seed environments the run started with.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def export_envs_cmd(
    run_dir: str,
    out: str,
    top: int | None,
    sort: str,
    skills: tuple[str, ...],
    min_win_rate: float | None,
    max_win_rate: float | None,
    min_plays: int,
    include_seeds: bool,
    force: bool,
) -> None:
    """Write RUN_DIR's admitted environments to the folder OUT (gymnasium ids spade/<name>-v0)."""
    run = _run_dir(run_dir)
    refuse_output(Path(out), run)
    from spade_async.export.atomic import ExportError
    from spade_async.export.envs import EnvFilters, export_envs

    filters = EnvFilters(top, sort, skills, min_win_rate, max_win_rate, min_plays, include_seeds)
    try:
        manifest = export_envs(run, Path(out), filters, force=force)
    except ExportError as exc:
        raise UsageProblem(str(exc)) from None
    click.echo(f"wrote {len(manifest)} environment(s) to {out}")
    for entry in manifest:
        w = entry["win_rate"]
        click.echo(f"  {entry['gym_id']:<40} {entry['skill'] or '-':<24} win rate {'-' if w is None else f'{w:.2f}'}")
    click.echo(
        f"use: PYTHONPATH={Path(out).resolve().parent} python -c 'import {Path(out).name}, gymnasium; "
        f'gymnasium.make("{manifest[0]["gym_id"]}")\'  or  --set selfplay.fixed_pool=\'"{out}"\''
    )


@export.command("lineage")
@click.argument("run_dir", type=click.Path())
@click.option(
    "--out", type=click.Path(dir_okay=False), default=None, help="Write the JSON to this file (default: stdout)."
)
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
def export_lineage_cmd(run_dir: str, out: str | None, force: bool) -> None:
    """Write RUN_DIR's lineage (which environment each mutation came from, how each ended) as JSON."""
    run = run_folder(run_dir, DB_FILE)
    from spade_async.export.atomic import check_out, write_file_whole
    from spade_async.export.lineage import lineage_json, read_lineage_data

    if out is not None:  # before anything is read or written
        check_out(Path(out), run, force=force, marker=None)
    data = read_lineage_data(run)
    text = lineage_json(data)
    if out is None:
        click.echo(text, nl=False)
        return
    write_file_whole(Path(out), text)
    summary = data["summary"]
    click.echo(
        f"wrote the lineage of {summary['environments']} environments ({summary['links']} mutation links) to {out}"
    )
