"""How far a rejected design got through admission: the stage the graded reward reads.

Why: with one flat penalty for every invalid design, a group of designs that are all invalid
(every group, for a model that has never written an admitted environment) gets one reward, so
per-skill centring gives GRPO nothing to learn from. Admission is a ladder (a code block, a
closed fence, code that parses, an environment class that loads, a working ``reset``, a
working ``step``, then the later checks), and a design that climbed further is closer to
one that works. :func:`admission_stage` reads the rung from what the designer and the
validator already record; ``selfplay.rewards.graded_invalid_reward`` turns it into a reward.
"""

from __future__ import annotations

from collections.abc import Mapping

from spade_async.selfplay.design.parsing import REASON_CUT_OFF

STAGES: tuple[str, ...] = (
    "no code block",
    "cut off before the closing fence (or stopped in a loop)",
    "the code does not parse",
    "no environment class loads (or a forbidden import)",
    "reset() fails",
    "step() fails",
    "a later check fails (ending, determinism, solution, latency, copy, hint)",
)
"""The rungs below admission, lowest first; a design's stage is the index of the one it stopped on."""

N_STAGES = len(STAGES)
"""An admitted design is past every rung (stage ``N_STAGES``)."""

REASON_LOOP = "stopped: the completion repeats itself (a loop) before the code block is closed"

_STEP_CHECKS = frozenset({"step", "garbage", "reward_range"})


def admission_stage(parse_reason: str | None, checks: Mapping[str, bool] | None) -> int:
    """The stage a design stopped on: ``parse_reason`` is the designer's parse failure (None
    when a code block was found), ``checks`` the validator's check results (None when the code
    never reached it).

    >>> admission_stage("no ```python code block found", None)
    0
    >>> admission_stage(None, {"imports": True, "loads": True, "reset": False})
    4
    >>> admission_stage(None, {"imports": True, "loads": True, "reset": True, "step": True, "solution": False})
    6
    """
    if parse_reason is not None:
        return 1 if parse_reason in (REASON_CUT_OFF, REASON_LOOP) else 0
    if not checks:  # parsed, validated, nothing failed: rejected after admission (copy, no hint)
        return N_STAGES - 1
    failed = {name for name, ok in checks.items() if not ok}
    if "size" in failed or ("loads" in failed and "imports" not in checks):
        return 2  # the static check stopped at the syntax (or the size)
    if "loads" in failed or "imports" in failed:
        return 3
    if "reset" in failed:
        return 4
    if failed & _STEP_CHECKS:
        return 5
    return 6
