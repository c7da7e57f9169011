"""SpadeApp driven headless with a Pilot against the fixture database."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Footer, HelpPanel, Input

from tests.tui.fixture_db import (
    COUNTER,
    ENVS,
    N_STEPS,
    RUN_NAME,
    T0,
    insert_event,
    insert_step,
    open_writer,
    step_metrics,
)
from tests.tui.helpers import FakeController, legend_value, make_app, settle, text_of
from tui.confirm import ConfirmStopScreen
from tui.widgets.envs import EnvTable
from tui.widgets.plots import ChartPanel

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


async def test_overview_panels_show_the_fixture_numbers(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        header = text_of(app.query_one("#header"))
        for expected in (
            RUN_NAME,
            "running",
            "step 12",  # the newest step index is 11; the TUI counts from 1 like the console
            "adapter v5",
            "elapsed 1:02:03",
            "123.4 tok/s",
            "60.0 s/step",
            "valid 80%",
            "(watching)",
        ):
            assert expected in header, expected

        assert legend_value(app, "#chart-regret", "mean regret") == "0.650"
        assert legend_value(app, "#chart-regret", "hint-arm return") == "0.750"
        assert legend_value(app, "#chart-regret", "plain-arm return") == "0.550"
        assert legend_value(app, "#chart-agent", "agent mean return") == "0.550"
        assert legend_value(app, "#chart-agent", "learnable fraction") == "0.500"

        bands = text_of(app.query_one("#bands"))
        # shares are of the 4 live environments; the rejected design is counted apart
        assert "in band" in bands and "2   50%" in bands and "too hard" in bands and "1   25%" in bands
        assert "rejected" in bands and "1  designs, not live" in bands and "%" not in bands.splitlines()[-1]

        skills = app.query_one("#skills", DataTable)
        rows = {str(r[0]): [str(c) for c in r] for r in map(skills.get_row_at, range(skills.row_count))}
        assert rows["Logical Deduction"] == ["Logical Deduction", "2", "50", "0.30", "0.80"]
        assert rows["Mathematical Reasoning"] == [
            "Mathematical Reasoning",
            "2",
            "100",
            "0.70",
            "0.40",
        ]

        log = "\n".join(line.text for line in app.query_one("#events").lines)  # type: ignore[attr-defined]
        assert "rejected" in log and "SyntaxError" in log
        assert "stale_drop" in log and "checkpoint" in log and "+0:06:00" in log


async def test_selecting_an_environment_shows_code_hint_document_and_replays(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        table = app.query_one("#env-table", EnvTable)
        assert table.row_count == len(ENVS)
        table.focus()
        table.move_cursor(row=table.get_row_index(COUNTER.id))
        await settle(app, pilot)
        assert app.detail is not None and app.detail.summary.id == COUNTER.id

        detail = app.query_one("#env-detail")
        assert "document: Integer sequences" in text_of(detail.query_one("#env-meta"))
        assert f"hint: {COUNTER.hint}" in text_of(detail.query_one("#env-hint"))
        code = text_of(detail.query_one("#env-code"))
        assert "class CounterGame:" in code and "def step(self, action):" in code
        plain = text_of(detail.query_one("#env-plain"))
        assert "Plain play" in plain and "outcome +0.00" in plain and "Total 6." in plain
        hinted = text_of(detail.query_one("#env-hinted"))
        assert "Hinted play" in hinted and "outcome +1.00" in hinted
        assert "You win!" in hinted and "[reward +1.00]" in hinted


async def test_filter_narrows_the_table_and_escape_clears_it(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash")
        box = app.query_one("#filter", Input)
        assert box.display and box.has_focus
        await pilot.press(*"spatial")
        await settle(app, pilot)
        table = app.query_one("#env-table", EnvTable)
        assert table.row_count == 1
        assert str(table.get_row_at(0)[2]) == "Spatial Reasoning"
        await pilot.press("enter")
        assert table.has_focus
        await pilot.press("escape")
        await settle(app, pilot)
        assert table.row_count == len(ENVS) and not box.display


async def test_export_key_writes_the_selected_environment(db_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "exports"
    app = make_app(db_path, export_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        table = app.query_one("#env-table", EnvTable)
        table.move_cursor(row=table.get_row_index(COUNTER.id))
        await settle(app, pilot)
        await pilot.press("e")
        files = list(out.glob("*.py"))
        assert len(files) == 1 and COUNTER.code in files[0].read_text()
        assert any(str(files[0]) in note for note in app.notes)


async def test_export_key_refuses_an_invalid_environment_and_says_why(db_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "exports"
    broken = next(e for e in ENVS if not e.valid)
    app = make_app(db_path, export_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        table = app.query_one("#env-table", EnvTable)
        table.move_cursor(row=table.get_row_index(broken.id))
        await settle(app, pilot)
        assert app.detail is not None and app.detail.summary.id == broken.id
        await pilot.press("e")
        assert not out.exists() or not list(out.glob("*.py"))
        assert any("not exported" in n and "failed validation" in n and "SyntaxError" in n for n in app.notes)


async def test_pause_without_a_controller_says_not_the_owner(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "pause" not in text_of(app.query_one(Footer))  # not offered to a TUI that only watches
        await pilot.press("p")
        assert any("not the owner" in note for note in app.notes)


async def test_the_owner_is_offered_pause_in_the_footer(db_path: Path) -> None:
    app = make_app(db_path, controller=FakeController())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "pause/resume" in text_of(app.query_one(Footer))
        await pilot.press("p")
        assert not any("not the owner" in note for note in app.notes)


async def test_question_mark_shows_then_hides_the_keys(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "help" in text_of(app.query_one(Footer))
        await pilot.press("question_mark")
        await pilot.pause()
        panels = app.screen.query(HelpPanel)
        assert len(panels) == 1
        assert "export env" in text_of(panels.first())
        await pilot.press("question_mark")
        await pilot.pause()
        assert len(app.screen.query(HelpPanel)) == 0


async def test_designer_panel_counts_designs_and_explains_a_small_model(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "4 of 5 designs admitted" in text_of(app.query_one("#designer-note"))
    conn = open_writer(db_path)
    conn.execute("UPDATE environments SET valid = 0, status = 'invalid'")
    conn.execute("UPDATE runs SET config_toml = ?", ('[model]\nname = "embedded:smollm2-135m-instruct"\n',))
    conn.commit()
    conn.close()
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        note = " ".join(text_of(app.query_one("#designer-note")).split())
        assert "0 of 5 designs admitted" in note and "A model this small" in note and "docs/gpu.md" in note


async def test_designer_panel_of_a_fixed_pool_run(db_path: Path) -> None:
    conn = open_writer(db_path)
    conn.execute("UPDATE runs SET config_toml = ?", ('[selfplay]\nmode = "fixed"\n',))
    conn.commit()
    conn.close()
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "fixed pool: no designer" in text_of(app.query_one("#designer-note"))


async def test_pause_and_resume_an_owned_run(db_path: Path) -> None:
    ctl = FakeController()
    app = make_app(db_path, controller=ctl)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "(owner)" in text_of(app.query_one("#header"))
        await pilot.press("p")
        await pilot.pause()
        assert ctl.paused and "PAUSED" in text_of(app.query_one("#header"))
        await pilot.press("p")
        await pilot.pause()
        assert not ctl.paused and "PAUSED" not in text_of(app.query_one("#header"))


async def test_quit_without_a_controller_just_quits(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app.return_value == 0 and not app.is_running


async def test_quit_an_owned_run_asks_first(db_path: Path) -> None:
    ctl = FakeController()
    app = make_app(db_path, controller=ctl)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmStopScreen)
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmStopScreen)
        assert app.is_running and not ctl.stop_requested

        await pilot.press("q")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert ctl.stop_requested and not app.is_running


async def test_new_rows_appear_on_the_next_poll(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        conn = open_writer(db_path)
        insert_step(conn, N_STEPS, {**step_metrics(N_STEPS - 1), "regret_mean": 0.9})
        insert_event(conn, N_STEPS, "error", "sandbox worker died", created_at=T0 + 5000)
        conn.commit()
        conn.close()
        await app.poll_now()
        await pilot.pause()
        assert f"step {N_STEPS + 1}" in text_of(app.query_one("#header"))
        assert legend_value(app, "#chart-regret", "mean regret") == "0.900"
        assert app.query_one("#chart-regret", ChartPanel).series[0].steps[-1] == N_STEPS + 1
        log = "\n".join(line.text for line in app.query_one("#events").lines)  # type: ignore[attr-defined]
        assert "sandbox worker died" in log


async def test_missing_database_shows_waiting_then_the_run(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "waiting for" in text_of(app.query_one("#header"))
        from tests.tui.fixture_db import build_fixture_db

        build_fixture_db(db)
        await app.poll_now()
        await pilot.pause()
        assert RUN_NAME in text_of(app.query_one("#header"))


async def test_a_resumed_run_is_shown_from_its_checkpoint(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        conn = open_writer(db_path)
        for table in ("episodes", "steps", "events"):
            conn.execute(f"DELETE FROM {table} WHERE step > 5")
        conn.execute("DELETE FROM environments WHERE created_step > 5")
        insert_event(conn, 5, "resume", "resumed from checkpoint at step 6", created_at=T0 + 900)
        conn.commit()
        conn.close()
        await app.poll_now()
        await settle(app, pilot)
        assert "step 6/24 " in text_of(app.query_one("#header"))
        assert app.query_one("#env-table", EnvTable).row_count == 2
        log = "\n".join(line.text for line in app.query_one("#events").lines)  # type: ignore[attr-defined]
        assert "resume" in log and "rejected" not in log
