"""One decode step of a Llama model without transformers' per-layer glue, for the CPU engine.

Why: at a decode step every tensor is tiny (16 rows x 576 for SmolLM2-135M), so a step's
cost is as much the number of operations and Python calls as the arithmetic. The same
30-layer model with every dimension shrunk to almost nothing still took 19 ms a step through
``model(...)`` against 43 ms at full size (bf16, batch 16, 2 cores): the mask and cache
bookkeeping, the attention-interface dispatch, ``rotate_half``'s slices and ``cat``, the
module and decorator layers around each of them. :class:`LeanDecoder` runs the same modules
(embedding, the packed linears with their LoRA, the norms' weights, the rotary embedding)
in a flat loop: per layer RMSNorm through torch's ``rms_norm``, the rotary embedding as three
operations per tensor (its sign folded into a ``sin`` computed once per step), a boolean mask
built once per step, keys and values written into a :class:`DecodeCache` buffer, and the
attention as two matmuls with a float32 softmax (as ``engine/attention.py``'s decode
attention does).

What it computes: ``LlamaForCausalLM``'s logits for one new token per row, given the rows'
cached keys and values. Float32 statistics in the norm and the softmax, as transformers;
two roundings differ in bf16 (``rms_norm``'s, ``addcmul`` in the rotary embedding), so bf16
logits agree within bf16 rounding and float32 ones to ~1e-4 (tests/unit/test_lean_decode.py;
SmolLM2 in bf16 over 64 steps: the sampled token's logprob 0.024 apart on average).

What it leaves to transformers: every prefill (a query of more than one token), and every
model :func:`lean_decode_refusal` does not accept (another architecture, a non-SiLU MLP,
attention features this loop does not apply); ``HFEngine`` falls back to ``model(...)`` then.
Switch: ``engine.cpu_lean_decode``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["CACHE_CHUNK", "DecodeCache", "LeanDecoder", "lean_decode_refusal"]


def lean_decode_refusal(model: nn.Module) -> str | None:
    """Why :class:`LeanDecoder` cannot decode ``model`` exactly, or None when it can."""
    from transformers import LlamaForCausalLM

    if type(model) is not LlamaForCausalLM:
        return f"{type(model).__name__} is not LlamaForCausalLM"
    config: Any = model.config
    if config.hidden_act != "silu":
        return f"hidden_act {config.hidden_act!r} (only silu)"
    if getattr(config, "pretraining_tp", 1) != 1:
        return "pretraining_tp > 1"
    if model.training:
        return "the model is in training mode"
    return None


class LeanDecoder:
    """Decode steps over a ``LlamaForCausalLM``'s own modules (see the module docstring)."""

    def __init__(self, model: nn.Module) -> None:
        refusal = lean_decode_refusal(model)
        if refusal is not None:
            raise ValueError(f"lean decoding does not apply: {refusal}")
        llama: Any = model
        self.model = llama  # modules are looked up at each step: a LoRA wraps them after this
        config = llama.config
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(config.num_key_value_heads)
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self.heads)
        self.scaling = float(llama.model.layers[0].self_attn.scaling)

    def step(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, attend: torch.Tensor, cache: DecodeCache
    ) -> torch.Tensor:
        """Logits ``(B, vocab)`` for one new token per row, whose keys and values join ``cache``.

        ``input_ids`` and ``position_ids`` are ``(B, 1)``; ``attend`` is ``(B, cache.length + 1)``,
        True where a row attends (its cached positions and the new token)."""
        rows = input_ids.shape[0]
        slot = cache.reserve()
        base = self.model.model
        x = base.embed_tokens(input_ids)  # (B, 1, hidden)
        cos, sin = base.rotary_emb(x, position_ids)  # (B, 1, head_dim), any rope type the model has
        half = self.head_dim // 2
        cos = cos[:, :, None, :]  # (B, 1, 1, head_dim): over heads
        signed_sin = torch.cat([-sin[..., :half], sin[..., half:]], dim=-1)[:, :, None, :]
        blocked = torch.ones((rows, cache.capacity), dtype=torch.bool, device=attend.device)
        blocked[:, : slot + 1] = ~attend.bool()
        blocked = blocked[:, None, None, :]  # (B, 1, 1, capacity): shared by every head
        group = self.heads // self.kv_heads
        for index, layer in enumerate(base.layers):
            attn = layer.self_attn
            h = _rms_norm(x, layer.input_layernorm)
            q = _rotate(attn.q_proj(h).view(rows, 1, self.heads, self.head_dim), cos, signed_sin, half)
            k = _rotate(attn.k_proj(h).view(rows, 1, self.kv_heads, self.head_dim), cos, signed_sin, half)
            keys, values = cache.keys[index], cache.values[index]
            keys[:, :, slot].copy_(k.view(rows, self.kv_heads, self.head_dim))
            values[:, :, slot].copy_(attn.v_proj(h).view(rows, self.kv_heads, self.head_dim))
            scores = torch.matmul(q.view(rows, self.kv_heads, group, self.head_dim), keys.transpose(-1, -2)).float()
            scores.mul_(self.scaling).masked_fill_(blocked, float("-inf"))
            probs = torch.softmax(scores, dim=-1).to(values.dtype)
            context = torch.matmul(probs, values).view(rows, 1, self.heads * self.head_dim)
            x = x + attn.o_proj(context)
            h = _rms_norm(x, layer.post_attention_layernorm)
            mlp = layer.mlp
            x = x + mlp.down_proj(nn.functional.silu(mlp.gate_proj(h)).mul_(mlp.up_proj(h)))
        cache.length = slot + 1
        return self.model.lm_head(_rms_norm(x, base.norm))[:, -1, :]


CACHE_CHUNK = 16
"""Positions a :class:`DecodeCache` grows by at a time."""


class DecodeCache:
    """Per-layer keys and values ``(B, kv_heads, capacity, head_dim)`` with room to append.

    Why a buffer attended over whole rather than a tensor grown by ``cat`` every token: the
    ``cat`` copies every layer's cache at every step, and each step's new length is a new
    matmul shape, for which oneDNN builds a new bf16 kernel (a bf16 ``matmul`` over keys whose
    length changed every call took 259 us against 70 us at a fixed length, 2 cores). Here a
    step writes its token into the next free slot and attends over all ``capacity`` slots,
    the free ones masked; the buffer grows by :data:`CACHE_CHUNK` slots at a time, so the
    shape changes once per chunk. (A view of the filled part is no way out: a bf16 matmul on
    keys with a longer row stride was ~2x slower.) Free slots hold zeros, so a masked slot
    contributes exactly nothing."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.length = int(layers[0][0].shape[2])
        self.keys = [k for k, _ in layers]
        self.values = [v for _, v in layers]

    @property
    def capacity(self) -> int:
        return int(self.keys[0].shape[2])

    def reserve(self) -> int:
        """The slot the next token goes to, growing every layer by a chunk when full."""
        if self.length >= self.capacity:
            self.keys = [_grow(k) for k in self.keys]
            self.values = [_grow(v) for v in self.values]
        return self.length

    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer (keys, values) of the filled slots, ``(B, kv_heads, length, head_dim)``."""
        return [(k[:, :, : self.length], v[:, :, : self.length]) for k, v in zip(self.keys, self.values, strict=True)]


def _grow(x: torch.Tensor) -> torch.Tensor:
    free = x.new_zeros((*x.shape[:2], CACHE_CHUNK, x.shape[3]))
    return torch.cat([x, free], dim=2)


def _rms_norm(x: torch.Tensor, norm: Any) -> torch.Tensor:
    """transformers' ``LlamaRMSNorm``: statistics in float32, the weight applied in ``x``'s dtype."""
    normed = nn.functional.rms_norm(x.float(), (x.shape[-1],), eps=norm.variance_epsilon)
    return norm.weight * normed.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor, half: int) -> torch.Tensor:
    """``x * cos + rotate_half(x) * sin`` with ``rotate_half``'s sign already in ``signed_sin``:
    the halves swapped by one ``roll``, then one multiply and one fused multiply-add."""
    swapped = torch.roll(x, shifts=half, dims=-1)  # (x2, x1); the minus on x2 is in signed_sin
    return torch.addcmul(x * cos, swapped, signed_sin)
