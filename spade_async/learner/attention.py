"""Attention for the learner's short micro-batches on a CPU: two matmuls and a softmax.

Why: PyTorch's CPU flash-attention kernel (what transformers' ``sdpa`` reaches) is slow to
differentiate at short lengths. Forward and backward of one SmolLM2-135M layer's attention
(16 rows x 108 tokens, 9 query heads on 3 KV heads, bf16, 2 cores AMD EPYC) took 29-34 ms with
SDPA, 11.7 ms as ``softmax(q k^T) v`` through autograd: over 30 layers ~0.65 s of a ~4 s
GRPO step. The plain form keeps the whole score matrix, so it loses as sequences grow (16 x
192 tokens 56 ms vs 51; 16 x 256 137 vs 77; 1 x 660 37 vs 25): micro-batches up to
:data:`SHORT_ATTENTION_TOKENS` tokens whose scores fit in :data:`SHORT_ATTENTION_SCORES`
take this path, every other call goes to transformers' own ``sdpa`` function (as do other
devices, dropout, and what this path does not handle: soft-capping, sinks, position biases,
sliding windows).

The scores and the softmax are float32 (as SDPA's CPU kernels accumulate them), the matmuls
run in the inputs' dtype. Query heads are grouped onto their KV head (no repeated K/V). A
query that may attend to no key at all (a left-padding row) gets a uniform softmax instead
of NaN; its output is never trained on.

Registered with transformers' ``AttentionInterface`` (and its mask interface, as ``sdpa``
builds masks) under :data:`CPU_SHORT_ATTENTION`; the ``Trainer`` selects it on a CPU
(``learner.cpu_short_attention``).
"""

from __future__ import annotations

from typing import Any

import torch

from spade_async.engine.attention import plain_attention_applies, use_attention

__all__ = [
    "CPU_SHORT_ATTENTION",
    "SHORT_ATTENTION_SCORES",
    "SHORT_ATTENTION_TOKENS",
    "short_attention",
    "takes_short_path",
    "use_cpu_short_attention",
]

CPU_SHORT_ATTENTION = "spade_cpu_short"
"""The name this attention function is registered under in transformers."""

SHORT_ATTENTION_TOKENS = 160
"""Longest sequence that takes the plain path (measured crossover with SDPA: 160-192 at 16 rows)."""

SHORT_ATTENTION_SCORES = 4 * 2**20
"""Most score entries (rows x query heads x T x T) a micro-batch may hold per layer on the plain
path (16 MB in float32); 16 x 9 x 160^2 is 3.7 M."""


def takes_short_path(batch: int, heads: int, q_len: int, kv_len: int) -> bool:
    """Whether a self-attention call of these sizes runs as plain matmuls (else SDPA)."""
    return q_len == kv_len <= SHORT_ATTENTION_TOKENS and batch * heads * q_len * kv_len <= SHORT_ATTENTION_SCORES


def short_attention(
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
    """transformers' attention-function signature: query ``(B, Hq, T, D)``, key/value
    ``(B, Hkv, T, D)``, a boolean (True = attend) or additive mask broadcastable to
    ``(B, 1, T, T)`` or None (causal); returns ``(B, T, Hq, D)``."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, q_len, dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if not takes_short_path(batch, heads, q_len, kv_len) or not plain_attention_applies(query, key, dropout, kwargs):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    group = heads // kv_heads
    q = query.reshape(batch, kv_heads, group * q_len, dim)  # each KV head's query heads as rows of one matmul
    scores = torch.matmul(q, key.transpose(-1, -2)).float() * (dim**-0.5 if scaling is None else scaling)
    scores = scores.view(batch, kv_heads, group, q_len, kv_len)
    if attention_mask is None:
        causal = module.is_causal if is_causal is None else is_causal
        if causal:
            allowed = torch.ones(q_len, kv_len, dtype=torch.bool, device=query.device).tril()
            scores = scores.masked_fill(~allowed, torch.finfo(torch.float32).min)
    elif attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask[:, :, None], torch.finfo(torch.float32).min)
    else:
        scores = (scores + attention_mask[:, :, None].float()).clamp(min=torch.finfo(torch.float32).min)
    probs = torch.softmax(scores, dim=-1).to(value.dtype).view(batch, kv_heads, group * q_len, kv_len)
    out = torch.matmul(probs, value)  # (B, Hkv, group * T, D)
    return out.view(batch, heads, q_len, dim).transpose(1, 2).contiguous(), None


def use_cpu_short_attention(model: Any) -> None:
    """Register :func:`short_attention` (once) and switch ``model`` to it."""
    use_attention(model, CPU_SHORT_ATTENTION, short_attention)
