"""One step numbering (the console's, from 1) in everything a user reads or types: checkpoint
folder names, console lines, the resume message, the event log, ``eval --step``, the report;
and a run folder written with the old 0-based folder names keeps loading under the same
numbers. Scripted engine and learner, real sandbox and SQLite."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.eval.models import resolve_models
from spade_async.memory.queries import checkpoint_folders
from spade_async.report.data import read_run
from spade_async.report.markdown import summary
from spade_async.run.assemble import open_run
from spade_async.run.checkpointer import prune_checkpoints
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import make_config, rows
from tui.reader import EventRow
from tui.widgets.events import render_event

pytestmark = pytest.mark.anyio


def _cfg(tmp_path: Path, steps: int):  # type: ignore[no-untyped-def]
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    cfg.run.max_steps, cfg.run.checkpoint_every, cfg.run.keep_checkpoints = steps, 1, 10
    return cfg


async def _run(tmp_path: Path, steps: int, *, resume: bool = False) -> list[str]:
    lines: list[str] = []
    async with open_run(
        _cfg(tmp_path, steps),
        resume=resume,
        force=resume,
        engine=ScriptedEngine(),
        learner=ScriptedLearner(),
        report=lines.append,
    ) as p:
        await p.run(sync=True)
    return lines


def _as_peft(run: Path) -> None:
    """The scripted learner's adapter folders, made to look like PEFT folders for --step (the
    config and a weights file, as ``save_pretrained`` writes: a resume skips a checkpoint whose
    PEFT adapter has one without the other)."""
    from safetensors.torch import save_file

    for folder in (run / "checkpoints").glob("step_*/adapter"):
        (folder / "adapter_config.json").write_text("{}")
        save_file({}, str(folder / "adapter_model.safetensors"))


def _events(run: Path, kind: str) -> list[str]:
    db = run / "run.sqlite"
    found = [
        EventRow(i, s, k, m, t)
        for i, s, k, m, t in rows(
            db, f"SELECT id, step, kind, message, created_at FROM events WHERE kind = '{kind}' ORDER BY id"
        )
    ]
    return [render_event(e, 0.0).plain for e in found]


async def test_folders_console_events_resume_and_eval_step_agree(tmp_path: Path) -> None:
    run = tmp_path / "run"
    lines = await _run(tmp_path, 2)
    assert [" ".join(line.split("|")[0].split()) for line in lines if line.startswith("step ")] == ["step 1", "step 2"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1", "step_2"]
    # the TUI's event log: "step 2 ... checkpoint after step 2: checkpoints/step_2"
    logged = _events(run, "checkpoint")
    assert [line.split(" ", 1)[1] for line in logged] == [
        "step 1 checkpoint checkpoint after step 1: checkpoints/step_1",
        "step 2 checkpoint checkpoint after step 2: checkpoints/step_2",
    ]

    resumed = await _run(tmp_path, 3, resume=True)
    (said,) = [line for line in resumed if line.startswith("resuming")]
    assert said.startswith("resuming at step 3 from the checkpoint after step 2 (checkpoints/step_2, adapter v")
    assert [" ".join(line.split("|")[0].split()) for line in resumed if line.startswith("step ")] == ["step 3"]
    (event,) = _events(run, "resume")
    assert "step 2 resume" in event and "resumed at step 3 from the checkpoint after step 2" in event
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1", "step_2", "step_3"]

    _as_peft(run)
    _base, second, last = resolve_models(run, (), ("2", "last"))
    assert (second.label, Path(second.adapter or "").parent.name) == ("step_2", "step_2")
    assert (last.label, Path(last.adapter or "").parent.name) == ("step_3", "step_3")
    missing = CliRunner().invoke(cli, ["eval", str(run), "--step", "4"])
    assert missing.exit_code != 0 and "available: 1, 2, 3" in missing.output
    assert "checkpoints: step_1, step_2, step_3" in summary(read_run(run / "run.sqlite"), run)
    assert rows(run / "run.sqlite", "SELECT step FROM checkpoints ORDER BY step") == [(0,), (1,), (2,)]  # internal


def _make_old_style(run: Path) -> None:
    """Rename the folders and database paths the way runs written before the change had them:
    the checkpoint after step N (from 1) in ``step_{N-1}``."""
    for n in sorted(checkpoint_folders(run)):
        os.rename(run / "checkpoints" / f"step_{n}", run / "checkpoints" / f"step_{n - 1}")
    with sqlite3.connect(run / "run.sqlite") as conn:
        for step, path in conn.execute("SELECT step, path FROM checkpoints").fetchall():
            conn.execute(
                "UPDATE checkpoints SET path = ? WHERE step = ?", (str(Path(path).parent / f"step_{step}"), step)
            )


async def test_an_old_run_with_0_based_folders_keeps_loading(tmp_path: Path) -> None:
    run = tmp_path / "run"
    await _run(tmp_path, 2)
    _make_old_style(run)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_0", "step_1"]
    assert {n: p.name for n, p in checkpoint_folders(run).items()} == {1: "step_0", 2: "step_1"}

    _as_peft(run)
    _base, first, newest = resolve_models(run, (), ("1", "last"))
    assert (first.label, Path(first.adapter or "").parent.name, first.step) == ("step_1", "step_0", 0)
    assert (newest.label, Path(newest.adapter or "").parent.name) == ("step_2", "step_1")
    assert "checkpoints: step_0, step_1" in summary(read_run(run / "run.sqlite"), run)  # as on disk

    # pruning tells old and new folders apart by the database rows, not by the name alone
    prune_checkpoints(run, 1, {0, 1})
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1"]

    resumed = await _run(tmp_path, 3, resume=True)
    (said,) = [line for line in resumed if line.startswith("resuming")]
    assert said.startswith("resuming at step 3 from the checkpoint after step 2 (checkpoints/step_1, adapter v")
    # the new checkpoint is named the new way beside the old one, and both are found
    assert {n: p.name for n, p in checkpoint_folders(run).items()} == {2: "step_1", 3: "step_3"}
