"""The designer's examples and parents drawn from the shipped library (``memory.design_pool``).

Why: the warm start teaches writing on the generated library's training families
(``spade_async.envlib``): its prompts show library files as examples and parents. A run whose
prompts show the hand-written seed games instead asks the warm-started designer for something
it never saw, and it fails (measured on 2 cores: 0 of 16 designs admitted with the easy seeds
shown, 5 of 16 with library files shown; docs/designs.md). With ``design_pool = "library"``
each design job is built as the warm start built its pairs: a fresh design shows library files
of its skill, a mutation mutates one; the run's own admitted designs join the pool as they are
played (the memory of past environments SPADE keeps), so the designer builds on its own work.

Held-out families are never shown: they stay the measure of writing a game not seen. The
seeds keep their other role (games the agent plays when too few designs pass).

A switch that departs from the paper (whose designer shows its memory only): documented in
docs/rewards.md with the measured effect.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

from spade_async.envlib import split
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example

DESIGNED = frozenset({"fresh", "mutation", "repair"})
"""Origins of environments the run's designer wrote (not seeds, not injected by hand)."""


@functools.cache
def _library(domain: str) -> tuple[EnvRecord, ...]:
    if domain != "games":
        return ()
    train, _ = split()
    return tuple(
        EnvRecord(code=f.code, domain=domain, skill=f.skill, origin="seed", created_step=0, doc_title=f.name)
        for f in train
    )


def library_records(domain: str) -> list[EnvRecord]:
    """The library's training files as records (games only; other domains have no library)."""
    return list(_library(domain))


def _pool(skill: str, library: Sequence[EnvRecord], memory: Sequence[EnvRecord]) -> list[EnvRecord]:
    designed = [e for e in memory if e.origin in DESIGNED and e.valid and e.status != "invalid"]
    same = [e for e in [*library, *designed] if e.skill == skill]
    return same or [*library, *designed]


def library_parent(
    skill: str, library: Sequence[EnvRecord], memory: Sequence[EnvRecord], rng: random.Random
) -> EnvRecord | None:
    """A parent to mutate: a library file or one of the run's designs, of ``skill`` when there is one."""
    pool = _pool(skill, library, memory)
    return rng.choice(pool) if pool else None


def library_examples(
    skill: str,
    k: int,
    library: Sequence[EnvRecord],
    memory: Sequence[EnvRecord],
    rng: random.Random,
    *,
    exclude: str | None = None,
) -> list[Example]:
    """``k`` examples of ``skill`` (library files or the run's designs), none the ``exclude`` id."""
    pool = [e for e in _pool(skill, library, memory) if e.id != exclude]
    return [Example(e, "model") for e in rng.sample(pool, min(k, len(pool)))]
