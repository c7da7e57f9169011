"""Curriculum health metrics: where environments sit on the difficulty scale, and how varied they are.

Why these:  SPADE works only while the designer keeps producing environments the
agent sometimes wins (learnable) and that differ from each other (diverse). The TUI
histogram shows :func:`win_rate_band` per environment, the step log records
:func:`learnable_fraction` and :func:`vendi_score` of the live pool.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

from spade_async.selfplay.rewards import hint_regret, plateau

Band = Literal["too_easy", "in_band", "too_hard", "invalid"]

LEARNABLE_LOW = 0.2
LEARNABLE_HIGH = 0.8


def win_rate_band(w: float | None, valid: bool, low: float = 0.4, high: float = 0.6, ramp: float = 0.25) -> Band:
    """Which side of the designer's target band a hint-free win rate ``w`` falls on.

    ``in_band`` is exactly where the plateau term of the designer reward is positive,
    ``low - ramp < w < high + ramp`` (with the default band, 0.15 < w < 0.85): the
    designer earns difficulty credit there. ``too_hard`` is at or below ``low - ramp``,
    ``too_easy`` at or above ``high + ramp``. An environment that failed validation, or
    has no win rate yet (``None`` / NaN), is ``invalid``.

    >>> [win_rate_band(w, True) for w in (0.0, 0.15, 0.5, 0.85, 1.0)]
    ['too_hard', 'too_hard', 'in_band', 'too_easy', 'too_easy']
    >>> win_rate_band(0.5, False)
    'invalid'
    """
    if not valid or w is None or math.isnan(w):
        return "invalid"
    if plateau(w, low, high, ramp) > 0.0:
        return "in_band"
    return "too_hard" if w < low else "too_easy"


def learnable_fraction(win_rates: Iterable[float], low: float = LEARNABLE_LOW, high: float = LEARNABLE_HIGH) -> float:
    """Share of environments with ``low <= w <= high`` (default [0.2, 0.8]); 0.0 for none.

    Environments won always or never give GRPO no contrast, so this is the share of the
    pool the agent can learn from. NaN win rates count as not learnable.

    >>> learnable_fraction([0.0, 0.2, 0.5, 0.8, 1.0])
    0.6
    """
    values = list(win_rates)
    if not values:
        return 0.0
    return sum(1 for w in values if low <= w <= high) / len(values)


def vendi_score(embeddings: np.ndarray) -> float:
    """Vendi diversity: ``exp(entropy of the eigenvalues of K / n)``, K the cosine kernel.

    The effective number of distinct items: 1 when all embeddings point the same way,
    ``n`` when they are mutually orthogonal. 0.0 for no items. The eigenvalues of ``K / n``
    sum to 1 (unit diagonal) over at most ``n`` non-zero values, so the score lies in
    ``[1, n]``; it is clamped there, because float rounding in the eigensolver can land a
    hair outside (0.9999999999999996 for two near-identical items). Raises ``ValueError`` for a
    non-2-D array, non-finite values or an all-zero row (its cosine is undefined).

    >>> round(vendi_score(np.eye(3)), 6)
    3.0
    >>> round(vendi_score(np.ones((4, 2))), 6)
    1.0
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D (n, dim) array, got shape {x.shape}")
    n = x.shape[0]
    if n == 0:
        return 0.0
    if not np.all(np.isfinite(x)):
        raise ValueError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0.0):
        raise ValueError("an embedding is all zeros: cosine similarity is undefined")
    unit = x / norms
    # K / n = U U^T / n shares its non-zero eigenvalues with U^T U / n; use the smaller one.
    gram = unit @ unit.T if n <= unit.shape[1] else unit.T @ unit
    eigenvalues = np.clip(np.linalg.eigvalsh(gram / n), 0.0, None)
    eigenvalues = eigenvalues[eigenvalues > 1e-12]
    entropy = -float(np.sum(eigenvalues * np.log(eigenvalues)))
    return min(max(float(np.exp(entropy)), 1.0), float(n))


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def step_play_metrics(
    per_env: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    regret_scale: float,
    low: float = 0.4,
    high: float = 0.6,
    ramp: float = 0.25,
) -> dict[str, float]:
    """The per-step play metrics from each live environment's ``(plain, hinted)`` outcomes this step.

    ``plain_return_mean`` / ``hint_return_mean``: mean over all plays of the arm (NaN when
    none were played); ``regret_mean``: mean over the environments with both arms this step
    of :func:`~spade_async.selfplay.rewards.hint_regret` of their arm means; ``learnable_fraction``
    and the ``band_*`` counts: over the environments with a plain win rate this step.

    >>> m = step_play_metrics([([1.0, 0.0], [1.0, 1.0]), ([0.0, 0.0], [])], regret_scale=0.5)
    >>> m["plain_return_mean"], m["hint_return_mean"], m["regret_mean"], m["band_too_hard"]
    (0.25, 1.0, 1.0, 1.0)
    """
    plain = [o for p, _ in per_env for o in p]
    hinted = [o for _, h in per_env for o in h]
    rates = [statistics.fmean(p) for p, _ in per_env if p]
    regrets = [hint_regret(statistics.fmean(h), statistics.fmean(p), regret_scale) for p, h in per_env if p and h]
    bands = [win_rate_band(w, True, low, high, ramp) for w in rates]
    return {
        "n_envs": float(len(per_env)),
        "plain_return_mean": _mean(plain),
        "agent_return_mean": _mean(plain),
        "hint_return_mean": _mean(hinted),
        "regret_mean": _mean(regrets),
        "learnable_fraction": learnable_fraction(rates) if rates else math.nan,
        "band_too_easy": float(bands.count("too_easy")),
        "band_in_band": float(bands.count("in_band")),
        "band_too_hard": float(bands.count("too_hard")),
    }
