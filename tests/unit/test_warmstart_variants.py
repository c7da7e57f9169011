"""Rule-made mutations: each operator changes only the numbers it names, and the file still parses."""

from __future__ import annotations

import ast
import random

from spade_async.selfplay.design.novelty import code_key
from spade_async.warmstart import load_library
from spade_async.warmstart.variants import (
    FEWER,
    MORE,
    SMALLER,
    max_turns_literal,
    randint_bounds,
    rule_mutation,
    variants,
)

GAME = """class Guess(GameEnv):
    max_turns = 4  # four tries

    def reset(self, seed=None):
        self.secret = self.rng.randint(1, 9)
        return "Guess a number from 1 to 9 (or 19).", {}
"""


def test_more_raises_the_turns_and_a_bound_and_the_text_follows() -> None:
    (more,) = [v for v in variants(GAME, random.Random(0)) if v.operator == "more"]
    assert more.change == MORE
    turns = max_turns_literal(more.code)
    assert turns is not None and turns.value in (5, 6)
    ((lo, hi),) = randint_bounds(more.code)
    assert (lo.value, hi.value) == (1, 12)
    assert '"Guess a number from 1 to 12 (or 19)."' in more.code  # whole words only
    assert "# four tries" in more.code


def test_fewer_and_smaller_change_one_thing_each() -> None:
    by_op = {v.operator: v for v in variants(GAME, random.Random(0))}
    assert by_op["fewer"].change == FEWER and "max_turns = 3  # four tries" in by_op["fewer"].code
    assert by_op["fewer"].code.replace("max_turns = 3", "max_turns = 4") == GAME
    assert by_op["smaller"].change == SMALLER and "randint(1, 7)" in by_op["smaller"].code
    assert "from 1 to 7" in by_op["smaller"].code


def test_no_rule_applies_to_a_file_without_the_numbers() -> None:
    assert (
        rule_mutation(
            "class Odd(GameEnv):\n    def reset(self, seed=None):\n        return 'x', {}\n", random.Random(0)
        )
        is None
    )
    assert rule_mutation("def broken(:\n", random.Random(0)) is None
    two = "class T(GameEnv):\n    max_turns = 2\n"
    assert [v.operator for v in variants(two, random.Random(0))] == ["more"]  # never below 2 turns


def test_every_builtin_file_has_a_variant_that_parses_and_is_not_a_copy() -> None:
    for env in load_library("builtin"):
        for seed in range(3):
            variant = rule_mutation(env.code, random.Random(seed))
            assert variant is not None, env.name
            ast.parse(variant.code)
            assert code_key(variant.code) != code_key(env.code), env.name
