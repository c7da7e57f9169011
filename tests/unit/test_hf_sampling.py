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


def test_draw_finds_tokens_across_blocks_and_in_a_ragged_last_block() -> None:
    """The two-level search: mass placed in several blocks (one a partial last block, the
    vocabulary not a multiple of the block) is found where it is, in the right proportions."""
    from spade_async.engine.hf import SAMPLING_BLOCK

    vocab = 3 * SAMPLING_BLOCK + 17
    picks = {5: 0.2, SAMPLING_BLOCK: 0.3, 2 * SAMPLING_BLOCK + 255: 0.1, vocab - 1: 0.4}
    probs = torch.zeros(1, vocab)
    for token, p in picks.items():
        probs[0, token] = p
    drawn = _draw(probs.repeat(40_000, 1), torch.Generator().manual_seed(2))
    counts = torch.bincount(drawn, minlength=vocab).double() / 40_000
    assert set(torch.nonzero(counts).flatten().tolist()) == set(picks)
    for token, p in picks.items():
        assert abs(float(counts[token]) - p) < 0.01


def test_draw_matches_a_full_vocabulary_inverse_cdf() -> None:
    """Same uniform, same token as a one-level float64 search over the whole vocabulary."""
    from spade_async.engine.hf import SAMPLING_BLOCK

    probs = torch.softmax(3 * torch.randn(64, 5 * SAMPLING_BLOCK + 3, generator=torch.Generator().manual_seed(4)), -1)
    u = torch.rand(64, 1, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    cdf = probs.double().cumsum(-1)
    expected = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(-1)
    got = _draw(probs, torch.Generator().manual_seed(7))
    assert (got == expected).float().mean() >= 0.98  # a boundary may round the other way


def test_each_row_ends_at_its_own_stop_token_stop_string_loop_or_budget() -> None:
    """The per-row bookkeeping of a decode step (``_Rows.push``, moved out of the batch loop):
    a row ends at a stop token, a stop string, a loop or its budget, whichever comes first,
    and an ended row records nothing more."""
    from spade_async.engine.base import GenerationRequest, Sampling
    from spade_async.engine.hf import _Rows
    from spade_async.engine.loops import LOOP

    requests = [
        GenerationRequest(prompt_ids=[1], sampling=Sampling(max_new_tokens=5)),  # stop token 0
        GenerationRequest(prompt_ids=[1], sampling=Sampling(max_new_tokens=5, stop=("END",))),
        GenerationRequest(prompt_ids=[1], sampling=Sampling(max_new_tokens=9, loop_ngram=1, loop_repeats=3)),
        GenerationRequest(prompt_ids=[1], sampling=Sampling(max_new_tokens=2)),  # budget
    ]
    words = {7: "E", 8: "ND", 9: "x"}
    rows = _Rows.start(requests, {0}, lambda ids: "".join(words.get(t, "?") for t in ids))
    for step in ([9, 7, 5, 9], [0, 8, 5, 9], [9, 9, 5, 9]):
        rows.push(step, torch.tensor([-0.5, -1.0, -1.5, -2.0]))
    assert rows.tokens == [[9, 0], [7, 8], [5, 5, 5], [9, 9]]
    assert rows.finish == ["stop", "stop", LOOP, "length"]
    assert rows.done == [True] * 4
    assert rows.logprobs[3] == [-2.0, -2.0]
