"""Archive rows grouped into rounds: the figures the TUI and the report show.

Why from the stored rows and their ``solved_then`` / ``solved_now`` flags, not the config: a
reader (the TUI, a report written later) must show what the run decided with the threshold it
ran with, whatever the config says now.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from spade_async.eval.archive.sample import Member


@dataclass(frozen=True)
class Round:
    step: int
    """The training step after which it was requested, 1-based as the console counts."""
    adapter: str
    envs: int
    solved_then: int
    still_solved: int
    return_now: float
    return_then: float

    @property
    def fraction(self) -> float:
        """The 'still solved' fraction (NaN while none was solved at retirement)."""
        return self.still_solved / self.solved_then if self.solved_then else math.nan


def rounds(rows: Iterable[Mapping[str, Any]]) -> list[Round]:
    """One :class:`Round` per step, in step order (rows as stored: ``step`` 0-based). An
    environment with no return this round (every play errored) counts in ``envs`` only."""
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_step.setdefault(int(row["step"]), []).append(row)
    out = []
    for step in sorted(by_step):
        group = by_step[step]
        scored = [r for r in group if r["return_now"] is not None]
        then = [r for r in scored if r["solved_then"]]
        out.append(
            Round(
                step=step + 1,
                adapter=str(group[-1]["adapter"]),
                envs=len(group),
                solved_then=len(then),
                still_solved=sum(1 for r in then if r["solved_now"]),
                return_now=statistics.fmean(float(r["return_now"]) for r in scored) if scored else math.nan,
                return_then=statistics.fmean(float(r["return_then"]) for r in scored) if scored else math.nan,
            )
        )
    return out


def round_rows(
    step: int, adapter: str, results: Iterable[tuple[Member, list[float], int]], solved: float, seconds: float
) -> list[dict[str, Any]]:
    """The rows one round stores: per member (its outcomes this round, its errored plays),
    judged against the ``eval.archive_solved`` threshold ``solved``."""
    out = []
    for member, outcomes, errors in results:
        now = statistics.fmean(outcomes) if outcomes else None
        out.append(
            {
                "step": step,
                "env_id": member.env_id,
                "skill": member.skill,
                "adapter": adapter,
                "retired_step": member.retired_step,
                "return_then": member.return_then,
                "return_now": now,
                "n": len(outcomes),
                "n_errors": errors,
                "solved_then": int(member.return_then >= solved),
                "solved_now": int(now is not None and now >= solved),
                "seconds": seconds,
            }
        )
    return out
