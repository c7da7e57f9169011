"""Helpers for the TUI tests: an app that records notifications, a fake run controller,
and a way to read what a widget shows."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.worker import WorkerCancelled

from tests.tui.fixture_db import NOW
from tui.app import SpadeApp
from tui.controller import RunController


class RecordingApp(SpadeApp):
    """SpadeApp that also records its notifications, so tests can assert on them."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def notify(self, message: str, **kwargs) -> None:  # type: ignore[no-untyped-def, override]
        self.notes.append(str(message))
        super().notify(message, **kwargs)


class FakeController:
    """A RunController that only records what the TUI asked."""

    def __init__(self) -> None:
        self.paused = False
        self.stop_requested = False

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def request_stop(self) -> None:
        self.stop_requested = True


def make_app(
    db: Path,
    controller: RunController | None = None,
    export_dir: Path | None = None,
) -> RecordingApp:
    # A long poll interval: tests drive polls with ``await app.poll_now()``.
    return RecordingApp(db, controller, poll_interval=3600, clock=lambda: NOW, export_dir=export_dir)


def text_of(widget: Widget) -> str:
    """What ``widget`` shows, as plain text (all of it, not only the visible part); a
    container shows its children's text, one after the other."""
    if widget.children:
        return "\n".join(text_of(child) for child in widget.children)
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(line.text.rstrip() for line in lines)


def legend_value(app: App[object], panel_id: str, label: str) -> str:
    """The latest value a chart's legend shows for the series called ``label``."""
    legend = text_of(app.query_one(panel_id).query_one(".legend"))
    for line in legend.splitlines():
        head, _, rest = line.partition(label)
        if rest and head.strip() == "━━":
            return rest.split()[0]
    raise AssertionError(f"no {label!r} in the legend of {panel_id}:\n{legend}")


async def settle(app: App[object], pilot: Pilot[object]) -> None:
    """Wait until the polls and detail loads in flight are done and rendered."""
    for _ in range(3):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            pass  # a detail load replaced by a newer one: expected
    await pilot.pause()


def assert_snapshot_terminal(app: App[object]) -> None:
    """The app renders for the pinned snapshot terminal (tests/tui/conftest.py): the global
    state a snapshot depends on, checked where the snapshot is taken."""
    system = app.console.color_system
    assert system == "standard", f"the app's console uses the {system!r} colour system; snapshots need 'standard'"
    assert not app.no_color
