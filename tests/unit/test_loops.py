"""The loop check stops a repeating completion and leaves working code alone."""

from __future__ import annotations

import pytest

from spade_async.engine.loops import LoopGuard, loop_guard, repeats_itself
from spade_async.envs.seeds import load_seeds


def test_a_block_repeated_until_the_limit_is_stopped_at_its_fourth_copy() -> None:
    block = list(range(100, 140))  # a 40-token "paragraph"
    stream = list(range(50)) + block * 10
    guard = LoopGuard(ngram=32, repeats=4)
    stopped_at = next(i for i, tok in enumerate(stream) if guard.push(tok))
    # the first 32-gram of the block completes its 4th occurrence 3 periods + 32 tokens in
    assert stopped_at == 50 + 3 * len(block) + 31
    assert stopped_at < len(stream) // 2


def test_a_one_token_loop_stops_soon() -> None:
    guard = LoopGuard(ngram=8, repeats=3)
    assert [guard.push(7) for _ in range(10)].index(True) == 9  # 8 + 2 more


def test_text_without_repeats_is_never_stopped_and_off_means_off() -> None:
    assert not repeats_itself(range(5000), 32, 4)
    assert loop_guard(0, 4) is None
    with pytest.raises(ValueError):
        LoopGuard(0, 4)


@pytest.mark.parametrize("domain", ["games", "tool_use"])
def test_no_built_in_environment_file_would_be_stopped_by_the_default(domain: str) -> None:
    """The designer default (32 tokens, 4 times) on every seed file's characters and words
    (the real tokenizer's figure is in the module docstring: at most 3 occurrences)."""
    for seed in load_seeds("all", domain):
        words = [hash(w) for w in seed.source.split()]
        assert not repeats_itself(words, 32, 4), seed.name
