"""Decode-step attention for the HF engine on a CPU: one query token, grouped KV heads.

Why: at a decode step each row asks one query per head against its whole cached history.
PyTorch's CPU ``scaled_dot_product_attention`` (the flash kernel transformers' ``sdpa``
backend reaches, with the query heads packed onto their KV head) took 0.83 ms per layer for
16 rows x 610 cached tokens of SmolLM2-135M in bf16 (2 cores), ~1/3 of a decode step over 30
layers; two batched matmuls with a float32 softmax between them take 0.37 ms for the same
result (within bf16 rounding). Prefill (more than one query token), other devices and
anything this path does not handle (soft-capping, attention sinks, position biases,
dropout) go to transformers' own ``sdpa`` function unchanged.

Registered with transformers' ``AttentionInterface`` (and its mask interface, as ``sdpa``
builds masks) under :data:`CPU_DECODE_ATTENTION`; ``HFEngine`` selects it on a CPU
(``engine.cpu_decode_attention``).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["CPU_DECODE_ATTENTION", "decode_attention", "use_cpu_decode_attention"]

CPU_DECODE_ATTENTION = "spade_cpu_decode"
"""The name this attention function is registered under in transformers."""

_NOT_HANDLED = ("softcap", "s_aux", "sinks", "position_bias", "sliding_window")


def decode_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: query ``(B, Hq, q, D)``, key/value
    ``(B, Hkv, T, D)``, a boolean (True = attend) or additive mask broadcastable to
    ``(B, 1, q, T)``; returns ``(B, q, Hq, D)``."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    if (
        q_len != 1
        or query.device.type != "cpu"
        or dropout
        or heads % kv_heads
        or any(kwargs.get(name) is not None for name in _NOT_HANDLED)
    ):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    q = query.reshape(batch, kv_heads, heads // kv_heads, dim)  # each KV head's query heads as rows
    scores = torch.matmul(q, key.transpose(-1, -2)).float()  # (B, Hkv, group, T)
    scores.mul_(dim**-0.5 if scaling is None else scaling)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores.masked_fill_(~attention_mask, float("-inf"))
        else:
            scores.add_(attention_mask)
    probs = torch.softmax(scores, dim=-1).to(value.dtype)
    out = torch.matmul(probs, value)  # (B, Hkv, group, D)
    return out.reshape(batch, 1, heads, dim), None


def use_cpu_decode_attention(model: Any) -> None:
    """Register :func:`decode_attention` (once) and switch ``model`` to it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(CPU_DECODE_ATTENTION, decode_attention)
    AttentionMaskInterface.register(CPU_DECODE_ATTENTION, sdpa_mask)
    model.set_attn_implementation(CPU_DECODE_ATTENTION)
