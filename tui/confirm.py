"""The question asked before quitting stops a run this TUI owns.

Why ask: in the owning process, closing the TUI ends the training run; one stray ``q``
must not throw away hours of work.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmStopScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmStopScreen { align: center middle; }
    ConfirmStopScreen > Vertical {
        width: 56; height: auto; border: thick $error; background: $surface; padding: 1 2;
    }
    """
    BINDINGS = [  # noqa: RUF012 (Textual's own declaration style)
        Binding("y", "answer(True)", "stop the run"),
        Binding("n,escape", "answer(False)", "keep running"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Stop the run and quit?[/b]")
            yield Static("This TUI started the run: quitting stops training.")
            yield Static("[b]y[/b] stop and quit    [b]n[/b] / [b]esc[/b] keep running")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
