"""Paired difference of two models scored on the same items, with a 95% interval.

Why paired: both models play the same games on the same seeds (and answer the same
questions), so per-item differences cancel the item's own difficulty; the interval of the
mean difference is much tighter than comparing two independent means.

Method: percentile bootstrap over items (resample the item indices with replacement,
``n_resamples`` times, with a fixed seed so the same scores always give the same interval).
Why not a paired t interval: scores are 0/1 wins or bounded returns, often skewed near 0 for
a small model; the bootstrap makes no normality assumption and needs no t table.
Deviation from textbook: with fewer than two pairs no interval exists and both bounds are NaN;
when every difference is identical the interval is that single value (zero width).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedDelta:
    """``other - base`` over ``n`` paired items, with a ``confidence`` interval."""

    n: int
    base_mean: float
    other_mean: float
    delta: float
    low: float
    high: float
    method: str = "bootstrap"
    confidence: float = CONFIDENCE

    @property
    def significant(self) -> bool:
        """The interval excludes 0 (both bounds on the same side)."""
        return not math.isnan(self.low) and (self.low > 0.0 or self.high < 0.0)

    def as_dict(self) -> dict[str, float | int | str | bool]:
        return {**asdict(self), "significant": self.significant}


def _check(base: Sequence[float], other: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    if len(base) != len(other):
        raise ValueError(f"paired scores need equal lengths (got {len(base)} and {len(other)})")
    a = np.asarray(base, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired scores must be finite")
    return a, b


def paired_bootstrap(
    base: Sequence[float],
    other: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedDelta:
    """Mean of ``other - base`` with a percentile-bootstrap interval over the pairs."""
    a, b = _check(base, other)
    n = len(a)
    if n == 0:
        return PairedDelta(0, math.nan, math.nan, math.nan, math.nan, math.nan, "bootstrap", confidence)
    diff = b - a
    delta = float(diff.mean())
    if n < 2:
        return PairedDelta(n, float(a.mean()), float(b.mean()), delta, math.nan, math.nan, "bootstrap", confidence)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    means = diff[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    # Floating-point sums can put a constant difference a few ulps outside itself.
    low, high = min(float(low), delta), max(float(high), delta)
    return PairedDelta(n, float(a.mean()), float(b.mean()), delta, low, high, "bootstrap", confidence)
