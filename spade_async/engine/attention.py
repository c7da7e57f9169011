"""Attention for the HF engine's short queries on a CPU: decode steps and turn prefills.

Why: at a decode step each row asks one query per head against its whole cached history, and
an agent turn feeds its new observation (tens of tokens) against the cached transcript.
PyTorch's CPU ``scaled_dot_product_attention`` (the flash kernel transformers' ``sdpa``
backend reaches, with the query heads packed onto their KV head) took 0.83 ms per layer for
16 rows x 610 cached tokens of SmolLM2-135M in bf16 (2 cores), ~1/3 of a decode step over 30
layers; two batched matmuls with a float32 softmax between them take 0.37 ms for the same
result (within bf16 rounding). Queries of up to :data:`MAX_QUERY_TOKENS` tokens take this
path (each KV head's query heads and tokens as the rows of one matmul); a fresh prompt's
long prefill, other devices and anything this path does not handle (soft-capping,
attention sinks, position biases, dropout) go to transformers' own ``sdpa`` function.

Registered with transformers' ``AttentionInterface`` (and its mask interface, as ``sdpa``
builds masks) under :data:`CPU_DECODE_ATTENTION`; ``HFEngine`` selects it on a CPU
(``engine.cpu_decode_attention``).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "CPU_DECODE_ATTENTION",
    "decode_attention",
    "plain_attention_applies",
    "use_attention",
    "use_cpu_decode_attention",
]

CPU_DECODE_ATTENTION = "spade_cpu_decode"
"""The name this attention function is registered under in transformers."""

_NOT_HANDLED = ("softcap", "s_aux", "sinks", "position_bias", "sliding_window")

MAX_QUERY_TOKENS = 64
"""Longer queries (a fresh prompt's prefill) go to SDPA: its flash kernel tiles them, and their
score matrix here would be (group x q) x T floats per KV head."""


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
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if q_len > MAX_QUERY_TOKENS or not plain_attention_applies(query, key, dropout, kwargs):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    group = heads // kv_heads
    # each KV head's query heads (x query tokens) as the rows of one matmul: no repeated K/V
    q = query.reshape(batch, kv_heads, group * q_len, dim)
    scores = torch.matmul(q, key.transpose(-1, -2)).float()  # (B, Hkv, group * q, T)
    scores.mul_(dim**-0.5 if scaling is None else scaling)
    per_token = scores.view(batch, kv_heads, group, q_len, kv_len)
    if attention_mask is None and q_len > 1:  # causal, no padding: query i is key position T - q + i
        rows = torch.arange(kv_len - q_len, kv_len, device=query.device)
        attention_mask = (torch.arange(kv_len, device=query.device)[None, :] <= rows[:, None])[None, None]
    if attention_mask is not None:
        mask = attention_mask[:, :, None, -q_len:, :]  # (B|1, 1, 1, q, T): shared by every head
        if mask.dtype == torch.bool:
            per_token.masked_fill_(~mask, float("-inf"))
        else:
            per_token.add_(mask)
    probs = torch.softmax(scores, dim=-1)
    if q_len > 1:  # a left-padding query sees no key at all: zeros, not NaN (it is never read)
        probs.nan_to_num_(0.0)
    out = torch.matmul(probs.to(value.dtype), value)  # (B, Hkv, group * q, D)
    return out.view(batch, heads, q_len, dim).transpose(1, 2).contiguous(), None


def plain_attention_applies(query: torch.Tensor, key: torch.Tensor, dropout: float, kwargs: dict[str, Any]) -> bool:
    """Whether an attention call is one a plain matmul-softmax-matmul computes exactly as
    ``sdpa`` would: on the CPU, no dropout, whole query-head groups per KV head, and none of
    the features it does not apply (soft-capping, sinks, position biases, sliding windows)."""
    return (
        query.device.type == "cpu"
        and not dropout
        and query.shape[1] % key.shape[1] == 0
        and all(kwargs.get(name) is None for name in _NOT_HANDLED)
    )


def use_attention(model: Any, name: str, function: Any) -> None:
    """Register ``function`` under ``name`` with transformers (its masks built as for ``sdpa``)
    and switch ``model`` to it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, sdpa_mask)
    model.set_attn_implementation(name)


def use_cpu_decode_attention(model: Any) -> None:
    """Register :func:`decode_attention` (once) and switch ``model`` to it."""
    use_attention(model, CPU_DECODE_ATTENTION, decode_attention)
