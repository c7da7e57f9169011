"""How close is a design to the environment files the project ships? Its nearest one, and the ratio.

Why: the copy rule (``novelty``) rejects exact copies only; a design that is a library file
with one number changed passes it and is admitted. Whether the designer writes new games or
edits known ones is therefore measured, not assumed: every admitted design is compared with
every environment file the package ships (the generated library of ``spade_async.envlib`` and
the hand-written seeds), and its console line, its event and the report name the nearest file
and the ``difflib`` ratio (1.0 = the same text; near-copies score above 0.9).

The ratio is ``difflib.SequenceMatcher(None, a, b).ratio()`` taken both ways (it is not quite
symmetric), the larger of the two: the measure the library's own near-duplicate check uses.
Only text is compared: nothing is compiled or run. ``quick_ratio`` (symmetric) bounds both ratios from above,
so most files are passed over without the full comparison.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass

from spade_async.envlib import load_envlib
from spade_async.envs.seeds import load_seeds


@dataclass(frozen=True)
class Nearest:
    """The shipped file most like a design."""

    name: str
    ratio: float

    def describe(self) -> str:
        return f"nearest library file {self.name} ({self.ratio:.2f})"


def similarity(a: str, b: str) -> float:
    """The larger of the two ``difflib`` ratios of ``a`` and ``b`` (1.0: the same text)."""
    return max(difflib.SequenceMatcher(None, a, b).ratio(), difflib.SequenceMatcher(None, b, a).ratio())


@functools.cache
def shipped_files(domain: str = "games") -> tuple[tuple[str, str], ...]:
    """(name, code) of every environment file the package ships for ``domain``."""
    seeds = [(s.name, s.source) for s in load_seeds("all", domain)]
    generated = [(f.name, f.code) for f in load_envlib()] if domain == "games" else []
    return tuple(sorted([*generated, *seeds]))


def nearest(code: str, files: tuple[tuple[str, str], ...]) -> Nearest | None:
    """The file of ``files`` most like ``code`` (None when there are none)."""
    best: Nearest | None = None
    bounds = [(difflib.SequenceMatcher(None, code, text).quick_ratio(), name, text) for name, text in files]
    for bound, name, text in sorted(bounds, key=lambda b: (-b[0], b[1])):
        if best is not None and bound <= best.ratio:
            break
        ratio = similarity(code, text)
        if best is None or ratio > best.ratio:
            best = Nearest(name, round(ratio, 4))
    return best


def near_copy_reason(found: Nearest | None, limit: float) -> str | None:
    """Why a design whose nearest shipped file is ``found`` is a near-copy under ``limit``
    (``selfplay.max_library_similarity``), or None when it is not one.

    >>> near_copy_reason(Nearest("guess.py", 0.97), 0.95)
    'near-copy of library file guess.py (0.970 > 0.95)'
    >>> near_copy_reason(Nearest("guess.py", 0.95), 0.95) is None
    True
    >>> near_copy_reason(None, 0.5) is None
    True
    """
    if found is None or found.ratio <= limit:
        return None
    return f"near-copy of library file {found.name} ({found.ratio:.3f} > {limit:g})"
