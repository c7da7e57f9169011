"""What the designer has achieved so far, said in words: attempts, admissions, why designs fail.

Why its own module: on a CPU machine the embedded 135M model almost never writes an
environment that passes validation, so regret stays at 0 and there is nothing designed to
export. The console, the TUI, the report and ``export envs`` must all say so the same way
(what was tried, why it failed, what a model this small can and cannot do) instead of
showing empty charts or failing bare. These are pure functions over plain values.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spade_async.memory.queries import designed_envs

EMBEDDED_PREFIX = "embedded:"
"""Model names of the packaged CPU default (SmolLM2-135M) start with this."""
GPU_DOC = "docs/gpu.md"


@dataclass(frozen=True)
class DesignerTally:
    designed: int
    """Environments the designer wrote (seeds and injected environments not counted)."""
    admitted: int
    """Of those, how many passed validation."""
    reasons: list[tuple[str, int]] = field(default_factory=list)
    """The rejected designs' first reasons, by kind, most common first."""


def reason_kind(reason: str) -> str:
    """The kind of a validation reason: its text up to the first ': ' (the detail after it
    differs per design), cut to 80 characters.

    >>> reason_kind("reset(seed=0) failed: NameError: name 'x' is not defined")
    'reset(seed=0) failed'
    """
    head = reason.split(": ", 1)[0].strip()
    return head[:80] if head else "no reason recorded"


def tally(designs: Iterable[tuple[bool, Sequence[str]]]) -> DesignerTally:
    """Count ``(admitted, reasons)`` pairs, one per designed environment."""
    designed = admitted = 0
    kinds: Counter[str] = Counter()
    for ok, reasons in designs:
        designed += 1
        if ok:
            admitted += 1
        else:
            kinds[reason_kind(reasons[0]) if reasons else "no reason recorded"] += 1
    return DesignerTally(designed, admitted, kinds.most_common())


def read_tally(conn: sqlite3.Connection) -> DesignerTally:
    """The tally of a run database (any connection, read-only ones included)."""
    out = []
    for _skill, valid, reasons in designed_envs(conn):
        try:
            parsed = json.loads(reasons or "[]")
        except ValueError:
            parsed = []
        out.append((bool(valid), [str(r) for r in parsed] if isinstance(parsed, list) else []))
    return tally(out)


def top_reasons(t: DesignerTally, n: int = 3) -> str:
    """``'kind' x3, 'other' x1`` for the ``n`` most common rejection kinds ('' for none)."""
    return ", ".join(f"'{kind}' x{count}" for kind, count in t.reasons[:n])


def is_small_model(model: str | None) -> bool:
    """Whether ``model`` is the packaged CPU default (too small to design environments)."""
    return bool(model) and str(model).startswith(EMBEDDED_PREFIX)


def designer_verdict(t: DesignerTally, model: str | None, *, fixed_pool: bool = False) -> str | None:
    """One plain paragraph on the designer half, or None when there is nothing to explain
    (the designer has environments admitted, or has not tried yet in a self-play run)."""
    if fixed_pool:
        return (
            'Fixed-pool run (selfplay.mode = "fixed"): no designer, so there are no designed '
            "environments and no regret to reward; only the agent is trained."
        )
    if t.designed == 0 or t.admitted > 0:
        return None
    why = top_reasons(t)
    text = f"The designer wrote {t.designed} environment(s) and none passed validation"
    text += f" (most common: {why})." if why else "."
    if is_small_model(model):
        text += (
            f" A model this small ({model.removeprefix(EMBEDDED_PREFIX) if model else ''}) can play the "
            "seed games and learn them, but rarely writes a runnable environment: the live pool is topped up "
            "with seed games, so the agent's return and the regret shown are measured on those, not on "
            "designed environments. "
            f"The designer half needs a bigger model (the GPU path: {GPU_DOC})."
        )
    else:
        text += " The live pool is topped up with seed and memory environments until designs pass."
    return text


def designer_note(t: DesignerTally, model: str | None, *, fixed_pool: bool = False) -> str:
    """A few words for a small panel (the TUI): the tally, and what it means when nothing passed."""
    if fixed_pool:
        return "fixed pool: no designer, no regret; only the agent is trained"
    if t.designed == 0:
        return "no design yet"
    text = f"{t.admitted} of {t.designed} designs admitted"
    if t.admitted:
        return text
    text += " (the events below say why)."
    if is_small_model(model):
        text += (
            " A model this small plays and learns the seed games but rarely writes a runnable "
            "environment, so return and regret here come from the seed games: the designer half needs "
            f"a bigger model ({GPU_DOC})."
        )
    return text
