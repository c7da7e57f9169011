"""The library design pool: training families only, the run's played designs joining, same skill first."""

from __future__ import annotations

import random

from spade_async.envlib import held_out_families, split
from spade_async.memory.records import EnvRecord
from spade_async.selfplay.design.library_pool import library_examples, library_parent, library_records

MATH = "Mathematical Reasoning"


def design(code: str, skill: str = MATH, origin: str = "fresh", **kw: object) -> EnvRecord:
    return EnvRecord(code=code, domain="games", skill=skill, origin=origin, created_step=1, win_rate=0.5, **kw)  # type: ignore[arg-type]


def test_records_are_the_training_families_and_games_only() -> None:
    records = library_records("games")
    train, held = split()
    assert [r.code for r in records] == [f.code for f in train] and held
    assert not any(r.doc_title and r.doc_title.startswith(tuple(held_out_families())) for r in records)
    assert library_records("tool_use") == []


def test_parents_and_examples_are_of_the_skill_and_never_seeds_or_invalid_designs() -> None:
    library = library_records("games")
    mine = design("class Mine: pass\n")
    seed = design("class Seed: pass\n", origin="seed")
    bad = design("class Bad: pass\n", status="invalid")
    rng = random.Random(0)
    parents = [library_parent(MATH, library, [mine, seed, bad], rng) for _ in range(300)]
    assert all(p is not None and p.skill == MATH for p in parents)
    codes = {p.code for p in parents if p is not None}
    assert mine.code in codes and seed.code not in codes and bad.code not in codes
    examples = library_examples(MATH, 3, library, [mine], random.Random(1), exclude=mine.id)
    assert len(examples) == 3 and all(e.is_model and e.env.skill == MATH and e.env.id != mine.id for e in examples)


def test_the_same_rng_state_picks_the_same_files() -> None:
    library = library_records("games")
    a = [library_parent(MATH, library, [], random.Random(7)) for _ in range(3)]
    b = [library_parent(MATH, library, [], random.Random(7)) for _ in range(3)]
    assert a == b
