"""Stopping a completion that has started to repeat itself.

Why: a small designer model that loses its way copies a stretch of its parent and then
repeats it until the token limit (measured on SmolLM2-135M: most "cut off" designs were such
loops, not files that needed more tokens). Every token after the loop starts is wasted
decode time, and the design is rejected either way. So each engine watches the token stream
of a request whose sampling asks for it (``Sampling.loop_ngram``) and ends it with
``finish_reason = "loop"`` as soon as one n-gram of ``loop_ngram`` tokens has occurred
``loop_repeats`` times in the completion. The completion keeps the tokens generated so far
(the sample that trains on it sees what was sampled) and is scored like a cut-off design.

The default for the designer (32 tokens, 4 times) is above what working code repeats: over
every built-in environment file the most frequent 32-token n-gram occurs 3 times (a tool-use
file's repeated tool schemas), so no seed would be stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

LOOP = "loop"
"""``Completion.finish_reason`` of a completion stopped by the loop check."""


class LoopGuard:
    """Counts the n-grams of one completion as its tokens arrive; ``push`` says when to stop."""

    def __init__(self, ngram: int, repeats: int) -> None:
        if ngram < 1 or repeats < 2:
            raise ValueError(f"loop check needs ngram >= 1 and repeats >= 2, got {ngram}, {repeats}")
        self.ngram, self.repeats = ngram, repeats
        self._tokens: list[int] = []
        self._seen: Counter[tuple[int, ...]] = Counter()

    @property
    def count(self) -> int:
        """Tokens pushed so far."""
        return len(self._tokens)

    def push(self, token: int) -> bool:
        """Add one generated token; True when the completion now repeats itself."""
        self._tokens.append(token)
        if len(self._tokens) < self.ngram:
            return False
        gram = tuple(self._tokens[-self.ngram :])
        self._seen[gram] += 1
        return self._seen[gram] >= self.repeats

    def extend(self, tokens: Iterable[int]) -> bool:
        """``push`` each token; True as soon as one of them closes a loop."""
        return any(self.push(t) for t in tokens)


def loop_guard(ngram: int, repeats: int) -> LoopGuard | None:
    """A guard for one request, or None when the check is off (``ngram`` 0)."""
    return LoopGuard(ngram, repeats) if ngram > 0 else None


def repeats_itself(tokens: Iterable[int], ngram: int, repeats: int) -> bool:
    """Whether a finished token sequence contains a loop by the same rule (for benchmarks)."""
    return LoopGuard(ngram, repeats).extend(tokens)
