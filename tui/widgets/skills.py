"""Per-skill table: environment count, valid share, mean win rate and mean regret.

Why: the designer's rewards are centred per skill, so a skill that stays invalid or
saturated is the first thing to spot.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from spade_async.util.textsafe import terminal_safe

from ..stats import SkillStats, fmt_num


class SkillTable(DataTable[str | Text]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("skill", "envs", "valid %", "win rate", "regret")

    def show(self, rows: Sequence[SkillStats]) -> None:
        self.clear()
        for r in rows:
            self.add_row(
                Text(terminal_safe(r.skill)),  # a Text cell: shown as is (a str cell is read as markup)
                str(r.count),
                f"{r.valid_pct:.0f}",
                fmt_num(r.mean_win_rate),
                fmt_num(r.mean_regret),
                key=r.skill,
            )
