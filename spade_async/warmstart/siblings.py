"""Mutation pairs between siblings: two files of one family, and the run's instruction that fits.

Why: a mutation pair that only edits a number teaches a small model to copy its parent and
change a constant (measured: those pairs fell to a loss of 0.01-0.05 while fresh pairs stayed
near 1.0, and the only designs admitted were one seed with a number changed). Two files of one
family of the generated library share a mechanic but differ in what a designer changes when
asked for a variant: the words and story, what the player is told, how a lost game is scored,
the sizes and turns, or a rule. So a sibling is an honest child of its parent, one that
*behaves* differently, and the instruction shown is the one of the run's own ``MUTATIONS``
that names the largest difference between the two files (:func:`describe_change`).

The difference is read from the two files' Python tokens with the standard library's
``tokenize`` (nothing is compiled or run): with every string and number masked, equal token
streams mean the same rules in other words or numbers; otherwise the rules differ.
"""

from __future__ import annotations

import io
import tokenize

from spade_async.selfplay.prompts import MUTATIONS
from spade_async.warmstart.variants import max_turns_literal

LARGER, SMALLER, CLUE, TOLD, STORY, FEWER, RULE, SCORING = MUTATIONS


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        return [
            t
            for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, SyntaxError):
        return []


def _masked(tokens: list[tokenize.TokenInfo]) -> list[str]:
    """The token stream with every string and number replaced by a placeholder."""
    return ["<S>" if t.type == tokenize.STRING else "<N>" if t.type == tokenize.NUMBER else t.string for t in tokens]


def _floats(tokens: list[tokenize.TokenInfo]) -> set[str]:
    """Float literals other than the win and the plain zero: how partial credit is paid."""
    return {t.string for t in tokens if t.type == tokenize.NUMBER and "." in t.string} - {"1.0", "0.0"}


def _strings(tokens: list[tokenize.TokenInfo]) -> list[tokenize.TokenInfo]:
    return [t for t in tokens if t.type == tokenize.STRING]


def _scoring_lines(code: str) -> list[str]:
    """The lines that pay a reward, with the names in them: how a game is scored."""
    return [line.strip() for line in code.splitlines() if "return" in line and ("True" in line or "reward" in line)]


def describe_change(parent: str, child: str) -> str:
    """The ``MUTATIONS`` entry that names the largest difference from ``parent`` to ``child``.

    Rules first (the masked token streams differ): a change in how games end and pay
    (``SCORING``) when the scoring lines differ and little else does, otherwise ``RULE``. Same
    rules: fewer turns (``FEWER``), more turns or larger numbers (``LARGER``), smaller numbers
    (``SMALLER``); same numbers: ``TOLD`` when most changed strings are messages (on a ``return``
    line), else ``STORY`` (names, word lists, the story in the constants).
    """
    a, b = _tokens(parent), _tokens(child)
    if _masked(a) != _masked(b):
        changed_scoring = _scoring_lines(parent) != _scoring_lines(child) or _floats(a) != _floats(b)
        other_lines = set(parent.splitlines()) ^ set(child.splitlines())
        scoring = set(_scoring_lines(parent)) ^ set(_scoring_lines(child))
        if changed_scoring and len(other_lines) <= 2 * len(scoring) + 2:
            return SCORING
        return RULE
    turns_a, turns_b = max_turns_literal(parent), max_turns_literal(child)
    if turns_a is not None and turns_b is not None and turns_a.value != turns_b.value:
        return FEWER if turns_b.value < turns_a.value else LARGER
    numbers_a = [float(t.string) for t in a if t.type == tokenize.NUMBER and _is_number(t.string)]
    numbers_b = [float(t.string) for t in b if t.type == tokenize.NUMBER and _is_number(t.string)]
    if numbers_a != numbers_b:
        return LARGER if sum(numbers_b) > sum(numbers_a) else SMALLER
    changed = [(x, y) for x, y in zip(_strings(a), _strings(b), strict=True) if x.string != y.string]
    messages = sum(1 for x, _ in changed if x.line.lstrip().startswith("return"))
    return TOLD if messages > len(changed) - messages else STORY


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
