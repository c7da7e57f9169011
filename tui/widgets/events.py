"""The event log: validation rejections with reasons, staleness drops, checkpoints, errors.

Event messages quote environment text (exception messages, validator reasons), so every
message goes through ``terminal_safe``: an escape sequence is shown, never sent to the terminal.

Why timestamps relative to the run start: they mean the same in every timezone (and make
snapshots reproducible), and "+0:12:03" is what one compares with the elapsed clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import RichLog

from spade_async.util.textsafe import terminal_safe

from ..reader import EventRow
from ..stats import fmt_duration

_KIND_STYLE = {
    "rejected": "bold red",
    "stale_drop": "bold yellow",
    "checkpoint": "bold green",
    "resume": "bold cyan",
    "info": "bold blue",
    "error": "bold white on red",
    "steer": "bold magenta",  # a steering action the run applied or refused (spade_async.selfplay.steering)
    "adapter_mismatch": "bold red",  # the adapter probe failed (spade_async.adapter_check)
    "adapter_stop": "bold white on red",  # ... N times in a row: the run stops
    "cluster": "bold yellow",  # a remote pool or engine replica lost or restarted (spade_async.cluster.status)
}


class EventLog(RichLog):
    MAX_EVENTS = 500  # attaching to a long run renders only the newest (~1 ms each)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(max_lines=self.MAX_EVENTS, wrap=True, id=id)

    def add_events(self, events: Sequence[EventRow], run_start: float) -> None:
        for e in events[-self.MAX_EVENTS :]:
            self.write(render_event(e, run_start))


def render_event(e: EventRow, run_start: float) -> Text:
    text = Text()
    text.append(f"+{fmt_duration(max(0.0, e.created_at - run_start))} ", style="dim")
    text.append("step " + ("—" if e.step is None else str(e.step + 1)) + " ", style="dim")
    text.append(f"{terminal_safe(e.kind):<10}", style=_KIND_STYLE.get(e.kind, "bold"))
    text.append(" ")
    text.append(terminal_safe(e.message))  # env errors and validator reasons quote environment text
    return text
