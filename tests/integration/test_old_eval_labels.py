"""An old run's evaluation rows read in today's step numbering.

Runs written before steps were counted from 1 stored ``spade-async eval --step`` rows with the
model label ``step_i`` and in-loop rows with ``eval_id`` ``loop-step-i``, ``i`` the 0-based
index (also in the row's ``step`` column), so the report and the TUI showed ``step_0`` for
what ``--step 1`` and every other screen call step 1. Every listing of the table (the store,
the report, the TUI) now reads them as ``step_{i+1}`` (spade_async.util.steps.shown_eval_row);
a new run's rows come back as written, and reading never writes the database."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from spade_async.eval.models import resolve_models
from spade_async.memory.store import LOOP_EVAL_PREFIX, Store
from spade_async.report.data import read_run
from spade_async.report.markdown import summary
from spade_async.report.plots import eval_headlines
from spade_async.util.steps import shown_eval_row
from tui.reader import RunReader
from tui.widgets.evals import latest_rows, render_evals


def _row(
    eval_id: str, model: str, step: int | None, mean: float, *, task: str = "*", adapter: str | None = None
) -> dict[str, Any]:
    base = model == "base"
    return {
        "eval_id": eval_id,
        "step": step,
        "model": model,
        "adapter": adapter,
        "suite": "games",
        "task": task,
        "metric": "win_rate",
        "n": 32,
        "mean": mean,
        "base_mean": None if base else 0.25,
        "delta": None if base else mean - 0.25,
        "ci_low": None if base else mean - 0.3,
        "ci_high": None if base else mean - 0.2,
        "n_errors": 0,
        "seconds": 1.0,
    }


# What the version before the 1-based numbering wrote after `eval --step 0`, `eval --step 1`
# (the checkpoints after steps 1 and 2) and an in-loop evaluation after step 2.
OLD_ROWS = [
    _row("e-old-1", "base", None, 0.25),
    _row("e-old-1", "step_0", 0, 0.30),
    _row("e-old-2", "base", None, 0.25),
    _row("e-old-2", "step_1", 1, 0.40),
    _row("e-old-2", "step_1", 1, 0.50, task="mastermind"),
    _row(f"{LOOP_EVAL_PREFIX}1", "loop", 1, 0.35, adapter="v2"),
]
# The same evaluations as today's version writes them, and an --adapter PATH row (no step).
NEW_ROWS = [
    _row("e-new-1", "base", None, 0.25),
    _row("e-new-1", "step_1", 0, 0.30),
    _row("e-new-2", "step_2", 1, 0.40),
    _row("e-new-2", "step_2#2", 1, 0.40),
    _row(f"{LOOP_EVAL_PREFIX}2", "loop", 1, 0.35, adapter="v2"),
    _row("e-new-3", "step_7", None, 0.45, adapter="/elsewhere/checkpoints/step_7/adapter"),
]


def _make_run(run: Path, rows: list[dict[str, Any]], *, old_folders: bool) -> Path:
    """A run folder with checkpoints after steps 1 and 2 (named from 0 when ``old_folders``, as
    old versions did) holding PEFT adapters, and ``rows`` in its evals table."""

    async def write() -> None:
        async with await Store.open(run / "run.sqlite") as store:
            await store.start_run("run", "", None)
            for index in (0, 1):
                folder = run / "checkpoints" / f"step_{index if old_folders else index + 1}"
                (folder / "adapter").mkdir(parents=True)
                (folder / "adapter" / "adapter_config.json").write_text("{}")
                await store.record_checkpoint(index, str(folder))
            await store.record_evals(rows)

    anyio.run(write)
    return run / "run.sqlite"


def _add_rows(db: Path, rows: list[dict[str, Any]]) -> None:
    async def write() -> None:
        async with await Store.open(db) as store:
            await store.record_evals(rows)

    anyio.run(write)


def _store_rows(db: Path) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        async with await Store.open(db) as store:
            return await store.evals()

    return anyio.run(read)


def _raw(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT eval_id, model FROM evals ORDER BY id").fetchall()


def _tui_text(db: Path) -> tuple[list[dict[str, Any]], str]:
    reader = RunReader(db)
    try:
        polled = reader.poll().evals
    finally:
        reader.close()
    console = Console(width=160, file=io.StringIO(), record=True)
    console.print(render_evals(latest_rows(polled)))
    return polled, console.export_text()


def test_an_old_runs_eval_rows_use_todays_step_numbers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    db = _make_run(run, OLD_ROWS, old_folders=True)
    written = _raw(db)

    # what `--step N` calls each checkpoint of this old run (its folders are step_0, step_1)
    by_step = {m.step: m.label for m in resolve_models(run, (), ("1", "2"))[1:]}
    assert by_step == {0: "step_1", 1: "step_2"}

    listed = _store_rows(db)
    assert [r["model"] for r in listed] == ["base", "step_1", "base", "step_2", "step_2", "loop"]
    assert all(r["model"] == by_step[r["step"]] for r in listed if r["model"].startswith("step_"))
    assert listed[-1]["eval_id"] == f"{LOOP_EVAL_PREFIX}2"  # the in-loop evaluation after step 2
    assert [r["eval_id"] for r in listed[:5]] == [r["eval_id"] for r in OLD_ROWS[:5]]  # others as written

    data = read_run(db)
    assert [r["model"] for r in eval_headlines(data)] == ["step_1", "step_2", "loop"]
    md = summary(data, run)
    assert "| step_1 | games | win_rate | 32 | 0.250 | 0.300 |" in md
    assert "| step_2 | games | win_rate | 32 | 0.250 | 0.400 |" in md
    table = md.split("## Held-out evaluation", 1)[1].split("\n## ", 1)[0]
    assert "step_0" not in table

    polled, shown = _tui_text(db)
    assert [r["model"] for r in polled] == ["base", "step_1", "base", "step_2", "loop"]
    assert "step_1" in shown and "step_2" in shown and "step_0" not in shown

    assert _raw(db) == written  # reading relabels; the run's database is left as it was


def test_an_old_row_and_todays_row_of_one_checkpoint_are_one_model(tmp_path: Path) -> None:
    """Re-evaluating an old run's checkpoint after step 2 today (`eval --step 2`) gives the same
    model as its old `step_1` rows: the newest row is the one listed, under one name."""
    run = tmp_path / "run"
    db = _make_run(run, OLD_ROWS[:4], old_folders=True)
    (today,) = resolve_models(run, (), ("2",))[1:]
    _add_rows(db, [_row("e-today", today.label, today.step, 0.60)])
    headlines = {r["model"]: r["mean"] for r in eval_headlines(read_run(db))}
    assert headlines == {"step_1": 0.30, "step_2": 0.60}
    polled, _shown = _tui_text(db)
    assert {r["model"]: r["mean"] for r in latest_rows(polled) if r["delta"] is not None} == {
        "step_1": 0.30,
        "step_2": 0.60,
    }


def test_a_new_runs_eval_rows_are_read_as_written(tmp_path: Path) -> None:
    run = tmp_path / "run"
    db = _make_run(run, NEW_ROWS, old_folders=False)
    expected = [(r["eval_id"], r["model"]) for r in NEW_ROWS]

    assert [(r["eval_id"], r["model"]) for r in _store_rows(db)] == expected
    assert [(r["eval_id"], r["model"]) for r in read_run(db).evals] == expected
    polled, _shown = _tui_text(db)
    assert [(r["model"]) for r in polled] == [model for _id, model in expected]
    assert _raw(db) == expected


def test_relabelling_is_by_the_rows_own_step() -> None:
    assert shown_eval_row({"model": "step_3#2", "step": 3, "eval_id": "x"})["model"] == "step_4#2"
    assert shown_eval_row({"model": "step_4", "step": 3, "eval_id": "loop-step-4"}) == {
        "model": "step_4",
        "step": 3,
        "eval_id": "loop-step-4",
    }  # today's: as written
    assert shown_eval_row({"model": "step_3", "step": None, "eval_id": "x"})["model"] == "step_3"  # --adapter PATH
    assert shown_eval_row({"model": "stepper_3", "step": 3, "eval_id": "loop-step-3x"}) == {
        "model": "stepper_3",
        "step": 3,
        "eval_id": "loop-step-3x",
    }
    again = shown_eval_row(shown_eval_row({"model": "step_0", "step": 0, "eval_id": "loop-step-0"}))
    assert (again["model"], again["eval_id"]) == ("step_1", "loop-step-1")  # reading twice changes nothing more
