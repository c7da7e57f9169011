"""``spade-async report RUN_DIR``: PNG plots and a Markdown summary of a run (live or finished)."""

from __future__ import annotations

from pathlib import Path

import click

from spade_async.cli.errors import DB_FILE, UsageProblem, run_folder


@click.command("report")
@click.argument("run_dir", type=click.Path())
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Output folder (default: RUN_DIR/report).")
def report(run_dir: str, out: str | None) -> None:
    """Write plots (PNG) and report.md for RUN_DIR; reads its database read-only."""
    run = run_folder(run_dir, DB_FILE)
    if out is not None:
        target, own = Path(out).resolve(), (run / "report").resolve()
        if target != own and (target == run.resolve() or run.resolve() in target.parents):
            raise UsageProblem(
                f"{out} is in the run folder {run_dir}: write the report outside it, "
                f"or leave out --out for {run_dir}/report"
            )
    from spade_async.report.build import build_report

    files = build_report(run, Path(out) if out else None)
    click.echo(f"wrote {len(files)} files to {files[0].parent}:")
    for f in files:
        click.echo(f"  {f.name}")
