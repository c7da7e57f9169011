"""Micro-batches under a row cap and a padded-token budget (``learner.micro_batch_tokens``)."""

from __future__ import annotations

import pytest

from spade_async.learner.batching import build_micro_batches
from spade_async.learner.samples import TrainSample


def _sample(length: int, tag: int) -> TrainSample:
    ids = [tag] * length  # every token of a row carries its tag: rows are recognisable after sorting
    return TrainSample("agent", ids, [0] + [1] * (length - 1), [-1.0] * length, 1.0, 0)


LENGTHS = [30, 100, 5, 90, 40, 50, 10]


def _shapes(budget: int | None, rows: int) -> list[tuple[int, int]]:
    samples = [_sample(n, tag) for tag, n in enumerate(LENGTHS, start=1)]
    return [tuple(mb.input_ids.shape) for mb in build_micro_batches(samples, rows, 10_000, max_tokens=budget)]


def test_without_a_budget_the_row_count_cuts():
    assert _shapes(None, 3) == [(3, 100), (3, 40), (1, 5)]


def test_a_budget_packs_short_rows_together_and_never_exceeds_it():
    assert _shapes(200, 16) == [(2, 100), (4, 50), (1, 5)]
    assert all(rows * width <= 200 for rows, width in _shapes(200, 16))


def test_the_row_cap_still_holds_under_a_budget():
    assert _shapes(10_000, 3) == [(3, 100), (3, 40), (1, 5)]


def test_a_row_longer_than_the_budget_gets_a_micro_batch_of_its_own():
    assert _shapes(60, 16) == [(1, 100), (1, 90), (1, 50), (1, 40), (2, 30), (1, 5)]


@pytest.mark.parametrize("budget", [None, 1, 64, 200, 10_000])
def test_every_row_lands_once_with_its_own_tokens(budget):
    samples = [_sample(n, tag) for tag, n in enumerate(LENGTHS, start=1)]
    seen = []
    for mb in build_micro_batches(samples, 4, 10_000, max_tokens=budget):
        for row, attn in zip(mb.input_ids.tolist(), mb.attention_mask.tolist(), strict=True):
            real = [t for t, a in zip(row, attn, strict=True) if a]
            assert len(set(real)) == 1
            seen.append((real[0], len(real)))
    assert sorted(seen) == sorted(enumerate(LENGTHS, start=1))
