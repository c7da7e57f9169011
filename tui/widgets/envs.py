"""The environment browser: a table of recent environments and the selected one's details.

Environment text (code, hint, validation reasons, transcripts) is written by the model and
goes through ``terminal_safe``: escape sequences are shown, never sent to the terminal.

Why the table holds summaries only: code, documents and transcripts are large, so the app
loads them for the highlighted row alone (``RunReader.load_detail``) and hands the result
to ``EnvDetailView``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from spade_async.util.textsafe import terminal_safe

from ..reader import EnvDetail, EnvSummary
from ..stats import fmt_num
from .replay import render_episode

_STATUS_STYLE = {"active": "green", "retired": "dim", "invalid": "red"}


class EnvTable(DataTable[str | Text]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("step", "id", "skill", "win", "regret", "status")

    def show(self, envs: Sequence[EnvSummary]) -> None:
        """Replace the rows, keeping the highlighted environment highlighted if still shown."""
        selected = self.selected_id()
        self.clear()
        for e in envs:
            self.add_row(
                str(e.created_step + 1),
                e.id[:8],
                Text(terminal_safe(e.skill or "—")),
                fmt_num(e.win_rate),
                fmt_num(e.regret),
                Text(terminal_safe(e.status), style=_STATUS_STYLE.get(e.status, "")),
                key=e.id,
            )
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected), scroll=False)

    def selected_id(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # cursor outside the (just cleared) table
            return None
        return key.value


class EnvDetailView(VerticalScroll):
    DEFAULT_CSS = """
    EnvDetailView > Static { margin-bottom: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text("select an environment", style="dim italic"), id="env-meta")
        yield Static("", id="env-hint")
        yield Static("", id="env-code")
        yield Static("", id="env-plain")
        yield Static("", id="env-hinted")

    def show(self, detail: EnvDetail | None) -> None:
        if detail is None:
            self.query_one("#env-meta", Static).update(Text("select an environment", style="dim"))
            for name in ("hint", "code", "plain", "hinted"):
                self.query_one(f"#env-{name}", Static).update("")
            return
        self.query_one("#env-meta", Static).update(render_meta(detail))
        self.query_one("#env-hint", Static).update(render_hint(detail))
        self.query_one("#env-code", Static).update(
            Syntax(terminal_safe(detail.code), "python", theme="monokai", line_numbers=True, word_wrap=True)
        )
        self.query_one("#env-plain", Static).update(render_episode(detail.plain, "Plain play"))
        self.query_one("#env-hinted", Static).update(render_episode(detail.hinted, "Hinted play"))


def render_meta(d: EnvDetail) -> Group:
    s = d.summary
    head = Text()
    head.append(terminal_safe(s.skill or "—"), style="bold cyan")
    head.append(f"  {s.domain} · {s.origin} · ")
    head.append(s.status, style=_STATUS_STYLE.get(s.status, ""))
    head.append(f"  created step {s.created_step + 1}", style="dim")
    nums = Text(
        f"win {fmt_num(s.win_rate)}  hinted win {fmt_num(s.hint_win_rate)}  "
        f"regret {fmt_num(s.regret)}  designer reward {fmt_num(s.designer_reward)}  "
        f"plays {s.n_plays}"
    )
    doc = Text("document: ", style="bold")
    doc.append(terminal_safe(d.doc_title or "—"), style="italic")
    ident = Text(f"id {s.id}", style="dim")
    parts = [head, nums, doc, ident]
    if d.reasons:
        parts.append(Text(terminal_safe("validation: " + "; ".join(d.reasons)), style="red"))
    return Group(*parts)


def render_hint(d: EnvDetail) -> Text:
    text = Text("hint: ", style="bold yellow")
    text.append(terminal_safe(d.hint or "—"))
    return text
