"""The HF engine's token draw (inverse-CDF sampling, one uniform per row): it samples the
given distribution, never a zero-probability token, and is reproducible per generator."""

from __future__ import annotations

import torch

from spade_async.engine.hf import _draw, _sample


def test_draw_follows_the_distribution_and_skips_zero_probability() -> None:
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.0, 0.3]]).repeat(40_000, 1)
    counts = torch.bincount(_draw(probs, torch.Generator().manual_seed(0)), minlength=5).double() / 40_000
    assert counts[1] == 0 and counts[3] == 0
    assert torch.allclose(counts[[0, 2, 4]], torch.tensor([0.1, 0.6, 0.3], dtype=torch.float64), atol=0.01)


def test_draw_is_reproducible_and_unnormalised_rows_are_fine() -> None:
    probs = torch.rand(8, 49152) ** 8  # peaked, not normalised (top-p output is renormalised anyway)
    a = _draw(probs, torch.Generator().manual_seed(3))
    b = _draw(probs, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.dtype == torch.long and a.shape == (8,)
    assert bool((probs.gather(-1, a[:, None]) > 0).all())


def test_a_seeded_row_does_not_depend_on_its_batch() -> None:
    probs = torch.softmax(torch.randn(4, 1000, generator=torch.Generator().manual_seed(1)), -1)
    alone = _sample(probs[2:3], [torch.Generator().manual_seed(9)], torch.Generator().manual_seed(0))
    batched = _sample(probs, [None, None, torch.Generator().manual_seed(9), None], torch.Generator().manual_seed(5))
    assert int(batched[2]) == int(alone[0])
