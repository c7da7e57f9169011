"""`spade-async report` on a database written by the real pipeline: every PNG, the right size,
a Markdown summary that embeds them, and the run's files left untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import matplotlib.image
import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.memory.store import Store
from spade_async.report.plots import PIXELS, PLOTS
from tests.integration.runs import pipeline_run

pytestmark = pytest.mark.slow


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_writes_every_plot_and_a_summary(tmp_path: Path) -> None:
    run = pipeline_run(tmp_path)

    async def add_eval() -> None:
        async with await Store.open(run / "run.sqlite") as store:
            await store.record_evals(
                [
                    {
                        "eval_id": "e",
                        "model": "step_3",
                        "suite": "games",
                        "task": "*",
                        "metric": "win_rate",
                        "n": 32,
                        "mean": 0.4,
                        "base_mean": 0.25,
                        "delta": 0.15,
                        "ci_low": 0.05,
                        "ci_high": 0.25,
                        "n_errors": 0,
                    },
                    {
                        "eval_id": "e",
                        "model": "base",
                        "suite": "games",
                        "task": "*",
                        "metric": "win_rate",
                        "n": 32,
                        "mean": 0.25,
                        "n_errors": 0,
                    },
                ]
            )

    anyio.run(add_eval)
    before = digest(run / "config.toml")

    async def report_while_the_run_holds_its_writer() -> None:
        async with await Store.open(run / "run.sqlite") as live:
            result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, ["report", str(run)]))
            assert result.exit_code == 0, result.output
            await live.record_evals(
                [{"eval_id": "f", "model": "base", "suite": "x", "task": "*", "metric": "m", "n": 0, "n_errors": 0}]
            )  # the live writer is not blocked

    anyio.run(report_while_the_run_holds_its_writer)
    assert digest(run / "config.toml") == before
    out = run / "report"
    for name in PLOTS:
        png = out / name
        assert png.stat().st_size > 5_000, name
        height, width = matplotlib.image.imread(png).shape[:2]
        assert (width, height) == PIXELS, name
    md = (out / "report.md").read_text()
    assert all(f"]({name})" in md for name in PLOTS)
    assert "| step_3 | games | win_rate | 32 | 0.250 | 0.400 | +0.150 | [+0.050, +0.250] |" in md
    assert "steps recorded: 4" in md


def test_report_of_a_folder_without_a_run_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert (
        result.exit_code == 2 and "not a spade-async run folder" in result.output and "Traceback" not in result.output
    )
