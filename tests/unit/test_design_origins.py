"""``mutation_flags``: a generation's mutation share is the configured one, not a coin toss per prompt."""

from __future__ import annotations

import random
import statistics

import pytest

from spade_async.selfplay.design.origins import mutation_flags


@pytest.mark.parametrize("n,fraction", [(4, 0.5), (2, 0.5), (5, 0.3), (3, 1.0), (1, 0.5), (7, 0.0)])
def test_the_count_is_the_share_rounded_one_way_or_the_other(n: int, fraction: float) -> None:
    rng = random.Random(1)
    for _ in range(200):
        flags = mutation_flags(n, fraction, rng)
        assert len(flags) == n
        assert int(n * fraction) <= sum(flags) <= int(n * fraction) + 1


def test_a_whole_share_never_varies_and_a_part_share_keeps_its_mean() -> None:
    rng = random.Random(2)
    assert {sum(mutation_flags(4, 0.5, rng)) for _ in range(100)} == {2}
    counts = [sum(mutation_flags(1, 0.3, rng)) for _ in range(4000)]
    assert statistics.fmean(counts) == pytest.approx(0.3, abs=0.03)


def test_the_order_is_drawn() -> None:
    rng = random.Random(3)
    firsts = {mutation_flags(4, 0.5, rng)[0] for _ in range(50)}
    assert firsts == {True, False}


@pytest.mark.parametrize("n,fraction", [(-1, 0.5), (2, 1.5), (2, -0.1)])
def test_bad_arguments_are_refused(n: int, fraction: float) -> None:
    with pytest.raises(ValueError):
        mutation_flags(n, fraction, random.Random(0))
