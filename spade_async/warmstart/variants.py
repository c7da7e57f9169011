"""Rule-made mutations of a library file: ground truth for the warm start's mutation pairs.

Why: a library holds environments, not (parent, change, child) triples, so a mutation pair
used to pair a parent with a *different* file of its skill, which teaches a 135M model to
recall a file from its weights; it mostly cannot (measured: docs/designs.md). The run's
mutation prompt shows the parent's code, and a small model *can* copy what it is shown. So
each pair here is an honest mutation made by rule: the parent's own file with the change
the prompt asks for applied to its numbers, and the instruction is one of the run's own
``MUTATIONS`` that describes exactly that change.

The operators edit integer literals in the source text (found with the standard library's
``tokenize``; nothing is compiled or run), so comments, layout and every other token stay
byte-identical, and the result still parses:

- ``more``: ``max_turns`` up by 1-2 and the upper bound of one ``randint(lo, hi)`` raised
  ("make the hidden state larger ... and allow one or two more turns");
- ``smaller``: the upper bound of one ``randint(lo, hi)`` lowered, keeping at least three
  values ("make the hidden state smaller so the game is easier");
- ``fewer``: ``max_turns`` down by one, never below 2 ("allow fewer turns").

A bound's number is also replaced where it appears as a whole word in the file's strings
(so "a number from 1 to 9" follows ``randint(1, 9)``).
"""

from __future__ import annotations

import io
import random
import re
import tokenize
from dataclasses import dataclass

from spade_async.selfplay.prompts import MUTATIONS

MORE, SMALLER, FEWER = MUTATIONS[0], MUTATIONS[1], MUTATIONS[5]


@dataclass(frozen=True)
class Variant:
    """A rule-made child of a file: its code and the instruction it answers."""

    code: str
    change: str
    operator: str


@dataclass(frozen=True)
class _Number:
    value: int
    start: int  # offset in the source text
    end: int


def _offsets(code: str) -> list[int]:
    starts, total = [], 0
    for line in code.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return [*starts, total]


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return []


def _int(tok: tokenize.TokenInfo, lines: list[int]) -> _Number | None:
    if tok.type != tokenize.NUMBER or not tok.string.isdigit():
        return None
    return _Number(int(tok.string), lines[tok.start[0] - 1] + tok.start[1], lines[tok.end[0] - 1] + tok.end[1])


def max_turns_literal(code: str) -> _Number | None:
    """The integer in the first ``max_turns = N`` of ``code``, or None."""
    toks, lines = _tokens(code), _offsets(code)
    for i in range(len(toks) - 2):
        if toks[i].string == "max_turns" and toks[i + 1].string == "=":
            return _int(toks[i + 2], lines)
    return None


def randint_bounds(code: str) -> list[tuple[_Number, _Number]]:
    """Every ``randint(lo, hi)`` whose bounds are plain non-negative integer literals."""
    toks, lines = _tokens(code), _offsets(code)
    found = []
    for i in range(len(toks) - 5):
        names = [t.string for t in toks[i : i + 6]]
        if names[0] == "randint" and names[1] == "(" and names[3] == "," and names[5] == ")":
            lo, hi = _int(toks[i + 2], lines), _int(toks[i + 4], lines)
            if lo is not None and hi is not None and hi.value > lo.value:
                found.append((lo, hi))
    return found


def _replace(code: str, edits: list[tuple[_Number, int]]) -> str:
    out = code
    for number, new in sorted(edits, key=lambda e: e[0].start, reverse=True):
        out = out[: number.start] + str(new) + out[number.end :]
    return out


def _in_strings(code: str, old: int, new: int) -> str:
    """``old`` -> ``new`` where it is a whole word inside a string literal."""
    toks, lines = _tokens(code), _offsets(code)
    word = re.compile(rf"(?<![\w.]){old}(?![\w.])")
    spans = []
    for tok in toks:
        if tok.type == tokenize.STRING and word.search(tok.string):
            start = lines[tok.start[0] - 1] + tok.start[1]
            end = lines[tok.end[0] - 1] + tok.end[1]
            spans.append((start, end, word.sub(str(new), tok.string)))
    for start, end, text in reversed(spans):
        code = code[:start] + text + code[end:]
    return code


def _with_bound(code: str, edits: list[tuple[_Number, int]], bound: tuple[_Number, int] | None) -> str:
    out = _replace(code, [*edits, *([bound] if bound else [])])
    if bound is not None:
        out = _in_strings(out, bound[0].value, bound[1])
    return out


def variants(code: str, rng: random.Random) -> list[Variant]:
    """Every operator that applies to ``code``, each applied once (see the module docstring)."""
    turns = max_turns_literal(code)
    bounds = randint_bounds(code)
    out = []
    if turns is not None:
        bound = None
        if bounds:
            _, hi = rng.choice(bounds)
            bound = (hi, hi.value + max(1, hi.value // 3))
        out.append(Variant(_with_bound(code, [(turns, turns.value + rng.choice((1, 2)))], bound), MORE, "more"))
        if turns.value > 2:
            out.append(Variant(_replace(code, [(turns, turns.value - 1)]), FEWER, "fewer"))
    shrinkable = [(lo, hi) for lo, hi in bounds if hi.value - lo.value >= 4]
    if shrinkable:
        lo, hi = rng.choice(shrinkable)
        new_hi = max(lo.value + 2, hi.value - max(1, (hi.value - lo.value) // 3))
        out.append(Variant(_with_bound(code, [], (hi, new_hi)), SMALLER, "smaller"))
    return out


def rule_mutation(code: str, rng: random.Random) -> Variant | None:
    """One rule-made mutation of ``code`` (an operator chosen at random), or None if none applies."""
    options = variants(code, rng)
    return rng.choice(options) if options else None
