"""The steering keys, driven with a Pilot on a run folder written by the real pipeline
(scripted engine and learner, real sandbox and SQLite): each key writes a queued request
(who, what), invalid ones are refused with a notification and write nothing, and once the
run takes its next step the event log shows what it applied."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.runs import pipeline_run
from tests.integration.test_pipeline import alternating_designer, make_config
from tests.integration.test_steering import INJECTED_ENV
from tests.tui.helpers import FakeController, RecordingApp, make_app, settle
from tui.steer import PromptScreen
from tui.widgets.envs import EnvTable
from tui.widgets.plots import ChartPanel

pytestmark = pytest.mark.anyio
SIZE = (140, 44)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return pipeline_run(tmp_path, steps=2)


def requests(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return [
            (k, json.loads(a), w, s)
            for k, a, w, s in conn.execute("SELECT kind, args, who, status FROM steer_actions ORDER BY id")
        ]


def env_ids(db: Path, where: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute(f"SELECT id FROM environments WHERE {where} ORDER BY id")]


def live_envs(run_dir: Path) -> list[Any]:
    """The live set the run continues with: the last checkpoint's (a finished run stores its last
    generation as 'retired' once it is scored; resuming restores it as live)."""
    from spade_async.run.checkpoint import read_checkpoint

    return list(read_checkpoint(run_dir / "checkpoints" / "step_2")["snapshot"]["curriculum"]["live"])


async def select(app: RecordingApp, pilot: Any, env_id: str) -> None:
    await pilot.press("2")
    table = app.query_one("#env-table", EnvTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(env_id))
    await settle(app, pilot)


async def fill(app: RecordingApp, pilot: Any, **values: str) -> None:
    """Fill the open steering form and press enter."""
    assert isinstance(app.screen, PromptScreen)
    for name, value in values.items():
        app.screen.query_one(f"#field-{name}", Input).value = value
    app.screen.query_one(Input).focus()
    await pilot.press("enter")
    await settle(app, pilot)


async def test_each_key_queues_its_request_and_the_run_applies_them(run_dir: Path, tmp_path: Path) -> None:
    db = run_dir / "run.sqlite"
    live = live_envs(run_dir)
    designed, broken = next(e.env_id for e in live if e.design is not None), env_ids(db, "status = 'invalid'")[0]
    other = next(e.env_id for e in live if e.env_id != designed)
    mine = tmp_path / "mine.py"
    mine.write_text(INJECTED_ENV)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await select(app, pilot, designed)
        await pilot.press("r")
        await fill(app, pilot, reason="reward hacked")
        await select(app, pilot, other)
        await pilot.press("k")
        await settle(app, pilot)
        await pilot.press("i")
        await fill(app, pilot, path=str(mine))
        await pilot.press("b")
        await fill(app, pilot, low="0.3", high="0.7", share="0.5")
        sent = requests(db)
        assert [k for k, _, _, _ in sent] == ["retire", "pin", "inject", "band", "designer_share"]
        assert all(w.startswith("tui (watcher) ") and s == "queued" for _, _, w, s in sent)
        assert sent[0][1] == {"env_id": designed, "reason": "reward hacked"}
        assert sent[1][1] == {"env_id": other}
        assert sent[2][1]["code"] == INJECTED_ENV and sent[2][1]["name"] == "mine.py"
        assert sent[3][1] == {"low": 0.3, "high": 0.7} and sent[4][1] == {"share": 0.5}
        assert sum("queued #" in n for n in app.notes) == 5

        # Refused where they are asked: nothing is written.
        await select(app, pilot, broken)  # rejected by validation: never live
        await pilot.press("r")
        await fill(app, pilot, reason="x")
        await pilot.press("b")
        await fill(app, pilot, low="0.8", high="0.2")
        await pilot.press("i")
        await fill(app, pilot, path=str(tmp_path / "missing.py"))
        assert len(requests(db)) == 5
        refusals = [n for n in app.notes if n.startswith("not sent")]
        assert len(refusals) == 3 and "never live" in refusals[0] and "LOW <= HIGH" in refusals[1]
        assert "cannot read" in refusals[2]

        # The run takes one more step: it applies the five, in order, and logs them.
        cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
        cfg.run.max_steps = 3
        async with open_run(
            cfg,
            resume=True,
            force=True,
            engine=ScriptedEngine(policies={"designer": alternating_designer()}),
            learner=ScriptedLearner(),
            report=lambda s: None,
        ) as pipeline:
            await pipeline.run(sync=True)
        assert [s for _, _, _, s in requests(db)] == ["applied"] * 5
        await app.poll_now()
        await settle(app, pilot)
        log = "\n".join(line.text for line in app.query_one("#events").lines)  # type: ignore[attr-defined]
        for text in (
            "retire",
            "reward hacked",
            "pin",
            "inject mine.py",
            "target band 0.30-0.70",
            "designer share 0.50",
        ):
            assert text in log, text
        assert "step 3" in log  # they took effect at the third step
        for chart in ("#chart-regret", "#chart-agent"):  # and the charts mark that step
            assert app.query_one(chart, ChartPanel).chart.marks == (3,)


async def test_the_owning_tui_signs_as_owner_and_k_toggles_a_pin(run_dir: Path) -> None:
    db = run_dir / "run.sqlite"
    target = live_envs(run_dir)[0].env_id
    app = make_app(db, controller=FakeController())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await select(app, pilot, target)
        await pilot.press("k")
        await settle(app, pilot)
        with sqlite3.connect(db) as conn:  # as if the run had applied it
            conn.execute("UPDATE steer_actions SET status = 'applied', step = 2")
        await pilot.press("k")
        await settle(app, pilot)
    sent = requests(db)
    assert [k for k, _, _, _ in sent] == ["pin", "unpin"]
    assert all(w.startswith("tui (owner) ") for _, _, w, _ in sent)
