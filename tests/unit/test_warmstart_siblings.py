"""A sibling mutation pair is told the change that the two files really differ by."""

from __future__ import annotations

from spade_async.warmstart.siblings import FEWER, LARGER, RULE, SCORING, SMALLER, STORY, TOLD, describe_change

PARENT = """SKILL = "Mathematical Reasoning"
HINT = "Halve the range each time."
DESCRIPTION = "Guess the hidden number."
FRUITS = ["apple", "pear"]


class Guess(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.secret = self.rng.randint(1, 20)
        return "Guess a number from 1 to 20 with \\\\boxed{N}.", {}

    def step(self, action):
        self.turn += 1
        guess = int(self.parse_action(action) or 0)
        if guess == self.secret:
            return "Right!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "Out of turns.", 0.0, True, True, {}
        return "Higher." if guess < self.secret else "Lower.", 0.0, False, False, {}

    def solution(self):
        return [str(self.secret)]
"""


def test_fewer_and_more_turns() -> None:
    assert describe_change(PARENT, PARENT.replace("max_turns = 6", "max_turns = 4")) == FEWER
    assert describe_change(PARENT, PARENT.replace("max_turns = 6", "max_turns = 8")) == LARGER


def test_a_larger_or_smaller_hidden_range() -> None:
    assert describe_change(PARENT, PARENT.replace("randint(1, 20)", "randint(1, 40)")) == LARGER
    assert describe_change(PARENT, PARENT.replace("randint(1, 20)", "randint(1, 9)")) == SMALLER


def test_words_versus_messages() -> None:
    assert describe_change(PARENT, PARENT.replace('["apple", "pear"]', '["plum", "fig"]')) == STORY
    assert describe_change(PARENT, PARENT.replace('"Higher."', '"Go up."').replace('"Lower."', '"Go down."')) == TOLD


def test_a_new_rule_and_a_new_scoring() -> None:
    rule = PARENT.replace(
        'return "Higher." if guess < self.secret else "Lower.", 0.0, False, False, {}',
        'return ("Even." if self.secret % 2 == 0 else "Odd."), 0.0, False, False, {}',
    )
    assert describe_change(PARENT, rule) == RULE
    scoring = PARENT.replace(
        'return "Out of turns.", 0.0, True, True, {}',
        'return "Out of turns.", max(0.0, 0.5 - abs(guess - self.secret) / 40), True, True, {}',
    )
    assert describe_change(PARENT, scoring) == SCORING
