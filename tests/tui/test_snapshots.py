"""Snapshot tests of the main screens (pytest-textual-snapshot).

Deterministic by construction: fixed fixture times, an injected clock, polls driven by the
test (the interval is an hour). Regenerate after an intended change with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.syntax import Syntax
from textual.pilot import Pilot
from textual.widgets import Static

from spade_async.util.textsafe import terminal_safe
from tests.tui.fixture_db import COUNTER
from tests.tui.helpers import FakeController, assert_snapshot_terminal, make_app, settle
from tui.widgets.envs import EnvTable

SIZE = (120, 40)
SnapCompare = Callable[..., bool]


async def _loaded(pilot: Pilot[object]) -> None:
    assert_snapshot_terminal(pilot.app)
    await settle(pilot.app, pilot)


async def _counter_selected(pilot: Pilot[object]) -> None:
    assert_snapshot_terminal(pilot.app)
    await settle(pilot.app, pilot)
    await pilot.press("2")
    table = pilot.app.query_one("#env-table", EnvTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(COUNTER.id))
    await settle(pilot.app, pilot)
    await _code_shown(pilot, COUNTER.code)


async def _code_shown(pilot: Pilot[object], code: str) -> None:
    """Wait (in event-loop turns, not time) until the code view holds ``code`` and every
    scheduled refresh and animation has run: under load the detail load, the highlighted
    render and the capture can otherwise interleave."""
    view = pilot.app.query_one("#env-code", Static)
    for _ in range(200):
        content = view.content
        if isinstance(content, Syntax) and content.code == terminal_safe(code):
            break
        await settle(pilot.app, pilot)
    else:
        raise AssertionError("the code view never showed the selected environment's code")
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
    await pilot.pause()


async def _asked_to_stop(pilot: Pilot[object]) -> None:
    assert_snapshot_terminal(pilot.app)
    await settle(pilot.app, pilot)
    await pilot.press("q")
    await pilot.pause()


def test_overview_screen(snap_compare: SnapCompare, db_path: Path) -> None:
    assert snap_compare(make_app(db_path), terminal_size=SIZE, run_before=_loaded)


def test_environment_browser_screen(snap_compare: SnapCompare, db_path: Path) -> None:
    assert snap_compare(make_app(db_path), terminal_size=SIZE, run_before=_counter_selected)


def test_confirm_stop_screen(snap_compare: SnapCompare, db_path: Path) -> None:
    app = make_app(db_path, controller=FakeController())
    assert snap_compare(app, terminal_size=SIZE, run_before=_asked_to_stop)
