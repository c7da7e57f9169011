"""The HF engine's CPU attention for short queries (engine/attention.py) computes what
transformers' ``sdpa`` function does: one query token or a few against grouped KV heads, with
a boolean, an additive or no mask, left padding included; a long prefill goes to ``sdpa``
itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from spade_async.engine.attention import decode_attention

MODULE = SimpleNamespace(num_key_value_groups=3, is_causal=True)


def _inputs(q_len: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(q_len)
    q = torch.randn(4, 9, q_len, 16, generator=g).to(dtype)
    k = torch.randn(4, 3, 40, 16, generator=g).to(dtype)
    v = torch.randn(4, 3, 40, 16, generator=g).to(dtype)
    return q, k, v


@pytest.mark.parametrize("mask_kind", ["bool", "additive", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_one_query_token_matches_sdpa(mask_kind: str, dtype: torch.dtype) -> None:
    q, k, v = _inputs(1, dtype)
    keep = torch.ones(4, 1, 1, 40, dtype=torch.bool)
    keep[1, ..., :7] = False  # left padding on two rows
    keep[3, ..., :30] = False
    mask = {"bool": keep, "additive": torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, -1e9), "none": None}[
        mask_kind
    ]
    got, _ = decode_attention(MODULE, q, k, v, mask, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, mask, scaling=0.25)
    assert got.shape == want.shape == (4, 1, 9, 16)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(got.float(), want.float(), atol=tol)


def test_a_long_prefill_goes_to_sdpa_unchanged() -> None:
    q, k, v = _inputs(65, torch.float32)
    k, v = k.repeat(1, 1, 2, 1), v.repeat(1, 1, 2, 1)  # 80 keys: room for 65 causal queries
    got, _ = decode_attention(MODULE, q, k, v, None, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, None, scaling=0.25)
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_short_prefill_after_a_cache_matches_sdpa(dtype: torch.dtype) -> None:
    """Several query tokens against a longer cached history (an agent turn's new observation),
    causal, with left padding on some rows: the same as sdpa at every real query position."""
    q, k, v = _inputs(6, dtype)
    positions = torch.arange(40)
    keep = (positions[None, :] <= positions[-6:, None])[None, None].repeat(4, 1, 1, 1)  # (4, 1, 6, 40) causal
    keep[1, ..., :7] = False
    keep[2, ..., :37] = False  # its first two query tokens are padding: they see nothing
    got, _ = decode_attention(MODULE, q, k, v, keep, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, keep, scaling=0.25)
    assert got.shape == want.shape == (4, 6, 9, 16)
    assert torch.isfinite(got).all()
    real = keep.any(-1)[:, 0]  # (4, 6): query positions that see at least one key
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(got[real].float(), want[real].float(), atol=tol)


def test_no_mask_means_causal_from_the_end() -> None:
    q, k, v = _inputs(5, torch.float32)
    k, v = k[:, :, :5], v[:, :, :5]  # a fresh 5-token prompt with no padding: sdpa's mask is None
    got, _ = decode_attention(MODULE, q, k, v, None, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, None, scaling=0.25, is_causal=True)
    assert torch.allclose(got, want, atol=1e-5)
