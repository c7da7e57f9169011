"""The paired interval: exact cases, coverage of a known shift, symmetry, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spade_async.eval.stats import paired_bootstrap


def test_identical_scores_give_zero_delta_and_zero_width_interval() -> None:
    d = paired_bootstrap([0.0, 1.0, 0.5, 1.0], [0.0, 1.0, 0.5, 1.0])
    assert (d.n, d.delta, d.low, d.high) == (4, 0.0, 0.0, 0.0)
    assert not d.significant


def test_adapter_that_always_wins_where_base_loses_is_significant() -> None:
    d = paired_bootstrap([0.0] * 20, [1.0] * 20)
    assert d.delta == 1.0 and d.low == 1.0 and d.high == 1.0
    assert d.significant


def test_interval_brackets_the_delta_and_excludes_zero_for_a_clear_gain() -> None:
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, 200).astype(float)
    other = np.where(rng.random(200) < 0.3, 1.0, base)  # flips ~30% of items to a win
    d = paired_bootstrap(base.tolist(), other.tolist())
    assert d.low <= d.delta <= d.high
    assert d.low > 0.0 and d.significant
    assert d.base_mean == pytest.approx(base.mean()) and d.other_mean == pytest.approx(other.mean())


def test_noise_only_difference_interval_contains_zero() -> None:
    rng = np.random.default_rng(2)
    base = rng.integers(0, 2, 300).astype(float)
    other = rng.integers(0, 2, 300).astype(float)
    d = paired_bootstrap(base.tolist(), other.tolist())
    assert d.low < 0.0 < d.high and not d.significant


def test_swapping_the_models_mirrors_the_interval() -> None:
    a, b = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    ab, ba = paired_bootstrap(a, b), paired_bootstrap(b, a)
    assert ab.delta == -ba.delta
    assert ab.low == pytest.approx(-ba.high) and ab.high == pytest.approx(-ba.low)


def test_bootstrap_matches_the_normal_approximation_for_many_items() -> None:
    rng = np.random.default_rng(3)
    diff_base = rng.random(2000)
    other = diff_base + rng.normal(0.1, 0.5, 2000)
    d = paired_bootstrap(diff_base.tolist(), other.tolist())
    diff = other - diff_base
    half = 1.96 * diff.std(ddof=1) / math.sqrt(len(diff))
    assert d.low == pytest.approx(diff.mean() - half, abs=0.01)
    assert d.high == pytest.approx(diff.mean() + half, abs=0.01)


def test_same_scores_same_interval() -> None:
    a, b = [0.0, 1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0, 1.0]
    assert paired_bootstrap(a, b) == paired_bootstrap(a, b)


def test_too_few_pairs_have_no_interval() -> None:
    empty = paired_bootstrap([], [])
    assert empty.n == 0 and math.isnan(empty.delta) and math.isnan(empty.low)
    one = paired_bootstrap([0.0], [1.0])
    assert one.delta == 1.0 and math.isnan(one.low) and math.isnan(one.high) and not one.significant


def test_unpaired_or_non_finite_input_is_refused() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap([0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap([0.0, math.nan], [1.0, 1.0])
