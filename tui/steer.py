"""Steering keys of the monitor: retire, pin, inject, target band and designer share.

Why requests and not calls into the run: the same keys work in the TUI that started the run
and in one that only watches it from another terminal. Each key writes one queued row
through ``spade_async.memory.steering.queue_action`` (the checks the CLI makes, in a worker
thread: one short write transaction, never the UI thread); the run applies it at its next
step and logs what it did, which the event log then shows. A request the checks refuse is a
notification, and nothing is written.

Kept apart from ``app.py`` as a mixin (its own bindings and actions), so the app only names it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from spade_async.memory.readonly import open_readonly
from spade_async.memory.steering import SteerError, pinned_ids, queue_action, requester
from spade_async.util.textsafe import terminal_safe

from .reader import EventRow


def _read_env_file(path: str) -> tuple[str, str]:
    """(file name, text) of the file at ``path`` (``~`` expanded, relative to the TUI's folder)."""
    file = Path(path).expanduser()
    return file.name, file.read_text(encoding="utf-8")


class PromptScreen(ModalScreen[dict[str, str] | None]):
    """A small form: one labelled input per field; Enter submits, Esc cancels (None)."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 72; height: auto; border: thick $primary; background: $surface; padding: 1 2;
    }
    PromptScreen Input { margin-bottom: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]  # noqa: RUF012 (Textual's own declaration style)

    def __init__(self, title: str, fields: list[tuple[str, str, str]], note: str = "") -> None:
        """``fields``: (name, label, initial value)."""
        super().__init__()
        self.title_text = title
        self.fields = fields
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]")
            if self.note:
                yield Static(self.note, classes="note")
            for name, label, value in self.fields:
                yield Static(label)
                yield Input(value=value, id=f"field-{name}")
            yield Static("[b]enter[/b] send the request    [b]esc[/b] cancel")

    def on_input_submitted(self) -> None:
        self.dismiss({name: self.query_one(f"#field-{name}", Input).value.strip() for name, _, _ in self.fields})

    def action_cancel(self) -> None:
        self.dismiss(None)


class SteerKeys(App[int]):
    """The base of ``SpadeApp`` that holds the steering bindings and what they do (an ``App``
    subclass: Textual merges the bindings of the ``DOMNode`` classes in the MRO only)."""

    BINDINGS = [  # noqa: RUF012 (Textual's own declaration style)
        Binding("r", "steer_retire", "retire env", show=False),
        Binding("k", "steer_pin", "pin/unpin env", show=False),
        Binding("i", "steer_inject", "inject env", show=False),
        Binding("b", "steer_band", "band / designer share", show=False),
    ]

    # Set by SpadeApp.
    db_path: Path
    controller: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steered_steps: set[int] = set()
        """1-based steps at which the run applied a steering request (marked on the charts)."""

    def mark_steering(self, events: Sequence[EventRow], reset: bool = False) -> None:
        """Mark on every chart the steps at which the run applied a steering request."""
        from .widgets.plots import ChartPanel

        if reset:
            self.steered_steps = set()
        new = {
            e.step + 1
            for e in events
            if e.kind == "steer" and e.step is not None and not e.message.startswith("REJECTED")
        }
        if new - self.steered_steps or reset:
            self.steered_steps |= new
            for panel in self.query(ChartPanel):
                panel.set_marks(sorted(self.steered_steps))

    def _who(self) -> str:
        return requester("tui (owner)" if self.controller is not None else "tui (watcher)")

    def _selected_env(self) -> str | None:
        from .widgets.envs import EnvTable

        env_id = self.query_one("#env-table", EnvTable).selected_id()
        if env_id is None:
            self.notify("select an environment first (tab 2)", severity="warning")
        return env_id

    async def _send(self, kind: str, args: dict[str, Any]) -> bool:
        """Queue one request off the UI thread; a notification says what happened."""
        try:
            queued = await asyncio.to_thread(queue_action, self.db_path, kind, args, self._who())
        except SteerError as exc:
            self.notify(f"not sent: {terminal_safe(str(exc))}", severity="error")
            return False
        when = (
            "at its next step"
            if queued.run_status == "running"
            else f"when it resumes (the run is {queued.run_status})"
        )
        self.notify(f"queued #{queued.id}: {terminal_safe(queued.summary)}; the run applies it {when}")
        return True

    def _ask(self, screen: PromptScreen, then: Any) -> None:
        def answered(values: dict[str, str] | None) -> None:
            if values is not None:
                self.run_worker(then(values), group="steer")

        self.push_screen(screen, answered)

    def action_steer_retire(self) -> None:
        env_id = self._selected_env()
        if env_id is None:
            return

        async def send(values: dict[str, str]) -> None:
            await self._send("retire", {"env_id": env_id, "reason": values["reason"]})

        self._ask(
            PromptScreen(f"Retire environment {env_id[:12]} now", [("reason", "reason (recorded in the log)", "")]),
            send,
        )

    async def action_steer_pin(self) -> None:
        env_id = self._selected_env()
        if env_id is None:
            return

        def pinned() -> set[str]:
            with contextlib.closing(open_readonly(self.db_path)) as conn:
                return pinned_ids(conn)

        try:
            kind = "unpin" if env_id in await asyncio.to_thread(pinned) else "pin"
        except Exception:  # a database without steering: queue_action says so
            kind = "pin"
        await self._send(kind, {"env_id": env_id})

    def action_steer_inject(self) -> None:
        async def send(values: dict[str, str]) -> None:
            path = values["path"]
            try:
                name, code = await asyncio.to_thread(_read_env_file, path)
            except (OSError, UnicodeDecodeError) as exc:
                self.notify(f"not sent: {path}: cannot read ({exc.__class__.__name__})", severity="error")
                return
            pin = values["pin"].lower() in ("y", "yes", "1", "true")
            await self._send("inject", {"code": code, "name": name, "skill": values["skill"], "pin": pin})

        self._ask(
            PromptScreen(
                "Inject an environment file",
                [
                    ("path", "path of the .py file", ""),
                    ("skill", "skill (empty: its SKILL constant)", ""),
                    ("pin", "pin it? (y/n)", "n"),
                ],
                note="The run admits it with the same sandbox validation as a designed one.",
            ),
            send,
        )

    def action_steer_band(self) -> None:
        async def send(values: dict[str, str]) -> None:
            try:
                low = float(values["low"]) if values["low"] else None
                high = float(values["high"]) if values["high"] else None
                share = float(values["share"]) if values["share"] else None
            except ValueError:
                self.notify("not sent: band and share are numbers in [0, 1]", severity="error")
                return
            if (low is None) != (high is None):
                self.notify("not sent: give both ends of the band", severity="error")
                return
            if low is not None and high is not None:
                await self._send("band", {"low": low, "high": high})
            if share is not None:
                await self._send("designer_share", {"share": share})

        self._ask(
            PromptScreen(
                "Target band and designer share (for the rest of the run)",
                [
                    ("low", "band low (empty: unchanged)", ""),
                    ("high", "band high", ""),
                    ("share", "designer share of envs_per_step, 0-1 (0 pauses design; empty: unchanged)", ""),
                ],
            ),
            send,
        )
