"""The HF engine's CPU decode attention (engine/attention.py) computes what transformers'
``sdpa`` function does: one query token against grouped KV heads, with a boolean, an
additive or no mask; anything else (prefill) goes to ``sdpa`` itself."""

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


def test_prefill_goes_to_sdpa_unchanged() -> None:
    q, k, v = _inputs(40, torch.float32)
    got, _ = decode_attention(MODULE, q, k, v, None, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, q, k, v, None, scaling=0.25)
    assert torch.equal(got, want)
