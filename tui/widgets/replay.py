"""Renders one recorded episode as a readable transcript.

Why: a number says an environment is too hard; the transcript says why (the agent
misreads the rules, the game rejects valid moves, the hint gives the answer away).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from spade_async.util.textsafe import terminal_safe

from ..reader import Episode

_ROLE_STYLE = {"observation": "white", "agent": "bold cyan", "hint": "bold yellow"}
_MAX_CHARS = 2000  # per message: a runaway observation must not flood the pane


def render_episode(ep: Episode | None, title: str) -> RenderableType:
    head = Text(title, style="bold underline")
    if ep is None:
        return Group(head, Text("no recorded play yet", style="dim italic"))
    meta = Text(
        f"step {ep.step + 1} · adapter v{ep.adapter_version} · outcome {ep.outcome:+.2f} · "
        f"{ep.turns} turns" + (" · truncated" if ep.truncated else ""),
        style="dim",
    )
    lines: list[RenderableType] = [head, meta]
    for turn in ep.transcript:
        line = Text()
        line.append(f"{turn.role:>11} │ ", style=_ROLE_STYLE.get(turn.role, "white"))
        body = turn.text if len(turn.text) <= _MAX_CHARS else turn.text[:_MAX_CHARS] + " …"
        line.append(terminal_safe(body))  # observations and actions are model-written
        if turn.reward is not None:
            line.append(f"  [reward {turn.reward:+.2f}]", style="green" if turn.reward > 0 else "dim")
        lines.append(line)
    return Group(*lines)
