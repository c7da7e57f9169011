"""Which past environments the designer sees and which one it mutates."""

from __future__ import annotations

import random

from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import classify, pick_parent, prune_memory, select_examples

LOW, HIGH = 0.4, 0.6
MATH, LOGIC = "Mathematical Reasoning", "Logical Deduction"


def env(
    name: str,
    w: float | None,
    *,
    regret: float | None = 0.5,
    skill: str = MATH,
    step: int = 0,
    **kw: object,
) -> EnvRecord:
    return EnvRecord(
        code=name,
        domain="games",
        skill=skill,
        origin="fresh",
        created_step=step,
        win_rate=w,
        regret=regret,
        **kw,  # type: ignore[arg-type]
    )


def codes(examples: list) -> list[str]:
    return [e.env.code for e in examples]


def test_classify_bands() -> None:
    assert classify(env("a", 0.5), low=LOW, high=HIGH) == "model"
    assert classify(env("a", 0.4), low=LOW, high=HIGH) == "model"  # edges are in band
    assert classify(env("a", 0.6), low=LOW, high=HIGH) == "model"
    assert classify(env("a", 0.9), low=LOW, high=HIGH) == "saturated"
    assert classify(env("a", 0.1), low=LOW, high=HIGH) == "impossible"
    assert classify(env("a", None), low=LOW, high=HIGH) is None
    assert classify(env("a", 0.5, valid=False), low=LOW, high=HIGH) is None


def test_mix_of_models_and_avoids_models_first() -> None:
    cands = [
        env("good", 0.5, regret=0.9),
        env("ok", 0.45, regret=0.2),
        env("easy", 1.0),
        env("hard", 0.0),
    ]
    got = select_examples(cands, 2, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0))
    assert len(got) == 2
    assert got[0].is_model and got[0].env.code in {"good", "ok"}
    assert got[1].avoid and got[1].kind in {"saturated", "impossible"}
    assert "GOOD" in got[0].describe() and "AVOID" in got[1].describe()


def test_prefers_same_skill() -> None:
    cands = [env("other", 0.5, regret=1.0, skill=LOGIC), env("mine", 0.5, regret=0.1, skill=MATH)]
    for seed in range(5):
        got = select_examples(cands, 1, skill=MATH, low=LOW, high=HIGH, rng=random.Random(seed))
        assert codes(got) == ["mine"]
    got = select_examples(cands, 2, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0))
    assert codes(got) == ["mine", "other"]  # other skills fill in


def test_high_regret_models_preferred() -> None:
    cands = [env(f"low{i}", 0.5, regret=0.0) for i in range(6)] + [env("best", 0.5, regret=1.0)]
    for seed in range(10):
        got = select_examples(cands, 1, skill=MATH, low=LOW, high=HIGH, rng=random.Random(seed))
        assert codes(got) == ["best"]


def test_shortfall_filled_from_other_kind() -> None:
    only_models = [env(f"m{i}", 0.5) for i in range(4)]
    got = select_examples(only_models, 3, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0))
    assert len(got) == 3 and all(e.is_model for e in got)
    only_bad = [env("easy", 0.95), env("hard", 0.05), env("hard2", 0.0)]
    got = select_examples(only_bad, 2, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0))
    assert len(got) == 2 and all(e.avoid for e in got)


def test_min_regret_and_unusable_filtered() -> None:
    cands = [
        env("flat", 0.5, regret=0.0),
        env("unplayed", None),
        env("broken", 0.5, valid=False, status="invalid"),
    ]
    got = select_examples(cands, 3, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0), min_regret=0.1)
    assert got == []
    assert select_examples([env("a", 0.5)], 0, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0)) == []


def test_no_duplicates_and_deterministic() -> None:
    cands = [env(f"e{i}", i / 10, regret=i / 10, skill=MATH if i % 2 else LOGIC, step=i) for i in range(11)]
    cands += cands[:3]  # repeated rows
    a = select_examples(cands, 4, skill=MATH, low=LOW, high=HIGH, rng=random.Random(7))
    b = select_examples(cands, 4, skill=MATH, low=LOW, high=HIGH, rng=random.Random(7))
    assert codes(a) == codes(b)
    assert len(set(codes(a))) == len(a) == 4


def test_varies_between_designs() -> None:
    cands = [env(f"m{i}", 0.5, regret=0.5) for i in range(8)]
    rng = random.Random(0)
    seen = {tuple(codes(select_examples(cands, 2, skill=MATH, low=LOW, high=HIGH, rng=rng))) for _ in range(20)}
    assert len(seen) > 1


def test_pick_parent() -> None:
    cands = [
        env("easy", 0.9, regret=1.0),
        env("other_skill", 0.5, regret=1.0, skill=LOGIC),
        env("mine_a", 0.5, regret=0.3),
        env("mine_b", 0.55, regret=0.2),
    ]
    for seed in range(10):
        parent = pick_parent(cands, skill=MATH, low=LOW, high=HIGH, rng=random.Random(seed))
        assert parent is not None and parent.code in {"mine_a", "mine_b"}
    best = pick_parent(cands, skill=MATH, low=LOW, high=HIGH, rng=random.Random(0), top_n=1)
    assert best is not None and best.code == "mine_a"
    # no same-skill env in band: any in-band one; nothing in band: None
    parent = pick_parent(cands, skill="Optimization", low=LOW, high=HIGH, rng=random.Random(0), top_n=1)
    assert parent is not None and parent.code == "other_skill"
    assert pick_parent([env("easy", 0.9)], skill=MATH, low=LOW, high=HIGH, rng=random.Random(0)) is None


def test_prune_memory_keeps_every_skill() -> None:
    recent_math = [env(f"math{i}", 0.5, skill=MATH, step=100 + i) for i in range(10)]
    old_logic = [env(f"logic{i}", 0.5, skill=LOGIC, step=i) for i in range(3)]
    kept = prune_memory(recent_math + old_logic, 6)
    assert len(kept) == 6
    assert sum(e.skill == LOGIC for e in kept) == 3
    assert [e.created_step for e in kept] == sorted((e.created_step for e in kept), reverse=True)
    assert {e.code for e in kept if e.skill == MATH} == {"math9", "math8", "math7"}  # newest
    assert len(prune_memory(old_logic, 10)) == 3
