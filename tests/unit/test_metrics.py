"""Win-rate bands agree with the reward's plateau; learnable share; Vendi diversity properties."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_async.selfplay import health as metrics
from spade_async.selfplay.health import learnable_fraction, vendi_score, win_rate_band
from spade_async.selfplay.rewards import plateau


def test_doctests() -> None:
    assert doctest.testmod(metrics).failed == 0


@pytest.mark.parametrize(
    ("w", "band"),
    [
        (0.0, "too_hard"),
        (0.15, "too_hard"),
        (0.16, "in_band"),
        (0.4, "in_band"),
        (0.6, "in_band"),
        (0.84, "in_band"),
        (0.85, "too_easy"),
        (1.0, "too_easy"),
    ],
)
def test_band_edges_with_design_defaults(w: float, band: str) -> None:
    assert win_rate_band(w, True, 0.4, 0.6, 0.25) == band


def test_invalid_band() -> None:
    assert win_rate_band(0.5, False, 0.4, 0.6, 0.25) == "invalid"
    assert win_rate_band(None, True) == "invalid"
    assert win_rate_band(math.nan, True) == "invalid"


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0.01, 1))
def test_in_band_iff_plateau_positive(w: float, a: float, b: float, ramp: float) -> None:
    low, high = sorted((a, b))
    band = win_rate_band(w, True, low, high, ramp)
    assert (band == "in_band") == (plateau(w, low, high, ramp) > 0)
    if band == "too_hard":
        assert w < low
    if band == "too_easy":
        assert w > high


def test_learnable_fraction() -> None:
    assert learnable_fraction([]) == 0.0
    assert learnable_fraction([0.2, 0.8]) == 1.0
    assert learnable_fraction([0.19, 0.81, math.nan, 0.5]) == 0.25
    assert learnable_fraction(iter([0.5, 1.0])) == 0.5
    assert learnable_fraction([0.1, 0.3], low=0.0, high=0.2) == 0.5


@given(st.lists(st.floats(0, 1), max_size=50))
def test_learnable_fraction_is_a_share(ws: list[float]) -> None:
    assert 0.0 <= learnable_fraction(ws) <= 1.0


def test_vendi_extremes() -> None:
    assert vendi_score(np.zeros((0, 8))) == 0.0
    assert vendi_score(np.array([[3.0, 4.0]])) == pytest.approx(1.0)
    assert vendi_score(np.eye(5)) == pytest.approx(5.0)
    assert vendi_score(np.tile([1.0, 2.0, 3.0], (7, 1))) == pytest.approx(1.0)
    # Two identical groups of orthogonal directions: 2 effective items, whatever the scale.
    x = np.array([[1.0, 0.0], [5.0, 0.0], [0.0, 2.0], [0.0, 0.1]])
    assert vendi_score(x) == pytest.approx(2.0)


def test_vendi_matches_direct_kernel_formula_on_both_paths() -> None:
    rng = np.random.default_rng(0)
    for n, d in [(6, 16), (40, 3)]:  # n <= d uses K, n > d uses the d x d Gram
        x = rng.normal(size=(n, d))
        u = x / np.linalg.norm(x, axis=1, keepdims=True)
        lam = np.clip(np.linalg.eigvalsh(u @ u.T / n), 0, None)
        lam = lam[lam > 1e-12]
        assert vendi_score(x) == pytest.approx(math.exp(-np.sum(lam * np.log(lam))), rel=1e-9)


@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_vendi_bounds_and_invariance(n: int, d: int, seed: int) -> None:
    x = np.random.default_rng(seed).normal(size=(n, d)) + 1e-3
    score = vendi_score(x)
    assert 1.0 <= score <= n and score <= min(n, d) + 1e-9  # [1, n] exactly: clamped after rounding
    perm = np.random.default_rng(seed + 1).permutation(n)
    assert vendi_score(x[perm] * 3.0) == pytest.approx(score, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_vendi_of_identical_items_never_rounds_below_one(n: int) -> None:
    # Unclamped, the eigensolver's rounding gives 0.9999999999999998 for these (and
    # 0.9999999999999996 for two near-identical environments in a real run): fewer than one item.
    score = vendi_score(np.ones((n, 3)))
    assert 1.0 <= score <= n and score == pytest.approx(1.0)


def test_vendi_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D"):
        vendi_score(np.ones(3))
    with pytest.raises(ValueError, match="all zeros"):
        vendi_score(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="NaN"):
        vendi_score(np.array([[1.0, math.nan]]))


def test_vendi_grows_with_a_new_direction() -> None:
    base = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0]])
    more = np.vstack([base, [0.0, 0.0, 1.0]])
    assert vendi_score(more) > vendi_score(base)
