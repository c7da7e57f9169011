"""The learner's CPU attention for short micro-batches (learner/attention.py) computes what
transformers' ``sdpa`` function does, forward and backward: causal with no mask, a boolean
padding mask (left padding included: finite everywhere, equal where a query sees a key) and an
additive one, grouped KV heads; sequences past the threshold go to ``sdpa`` itself; the
``Trainer`` selects it on a CPU and not when the switch is off."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from spade_async.config import LearnerConfig, ModelConfig
from spade_async.learner import attention
from spade_async.learner.attention import (
    CPU_SHORT_ATTENTION,
    SHORT_ATTENTION_SCORES,
    SHORT_ATTENTION_TOKENS,
    short_attention,
    takes_short_path,
)

MODULE = SimpleNamespace(num_key_value_groups=3, is_causal=True)


def _inputs(t: int, dtype: torch.dtype, rows: int = 4) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(t)
    shapes = [(rows, 9, t, 16), (rows, 3, t, 16), (rows, 3, t, 16)]
    return [torch.randn(*s, generator=g).to(dtype).requires_grad_(True) for s in shapes]


def _padding_mask(t: int) -> torch.Tensor:
    """(4, 1, t, t) causal with right padding on row 1 and left padding on row 3."""
    positions = torch.arange(t)
    keep = (positions[None, :] <= positions[:, None])[None, None].repeat(4, 1, 1, 1)
    keep[1, ..., t - 5 :] = False  # its last 5 keys are padding
    keep[3, ..., :6] = False  # its first 6 keys are padding: its first 6 queries see nothing
    return keep


def _forward_backward(fn, inputs: list[torch.Tensor], mask: torch.Tensor | None, seen: slice):
    out, _ = fn(MODULE, *inputs, mask, scaling=0.25)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(7)).to(out.dtype)
    (out[:, seen] * weight[:, seen]).float().sum().backward()
    grads = [x.grad.clone() for x in inputs]
    for x in inputs:
        x.grad = None
    return out.detach(), grads


@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_short_attention_matches_sdpa_forward_and_backward(mask_kind: str, dtype: torch.dtype) -> None:
    t = 24
    inputs = _inputs(t, dtype)
    keep = _padding_mask(t)
    mask = {
        "none": None,
        "bool": keep,
        "additive": torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, float("-inf")),
    }[mask_kind]
    seen = slice(6, None) if mask is not None else slice(None)  # queries that see at least one key
    got, got_grads = _forward_backward(short_attention, inputs, mask, seen)
    want, want_grads = _forward_backward(sdpa_attention_forward, inputs, mask, seen)
    assert got.shape == want.shape == (4, t, 9, 16)
    assert torch.isfinite(got).all()  # a query with no key to see gets a finite (unused) output
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    assert torch.allclose(got[:, seen].float(), want[:, seen].float(), atol=tol, rtol=tol)
    for g, w in zip(got_grads, want_grads, strict=True):
        assert torch.isfinite(g).all()
        assert torch.allclose(g.float(), w.float(), atol=tol * 2, rtol=tol * 2)


def test_the_rule_sends_long_or_large_micro_batches_to_sdpa() -> None:
    assert takes_short_path(16, 9, 108, 108)
    assert takes_short_path(16, 9, SHORT_ATTENTION_TOKENS, SHORT_ATTENTION_TOKENS)
    assert not takes_short_path(1, 9, SHORT_ATTENTION_TOKENS + 1, SHORT_ATTENTION_TOKENS + 1)
    assert not takes_short_path(64, 9, 128, 128)  # 9.4 M scores > SHORT_ATTENTION_SCORES
    assert 64 * 9 * 128 * 128 > SHORT_ATTENTION_SCORES
    assert not takes_short_path(16, 9, 1, 108)  # not self-attention over the whole sequence


def test_a_long_sequence_goes_to_sdpa_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = _inputs(SHORT_ATTENTION_TOKENS + 1, torch.float32, rows=1)
    got, _ = short_attention(MODULE, *inputs, None, scaling=0.25)
    want, _ = sdpa_attention_forward(MODULE, *inputs, None, scaling=0.25)
    assert torch.equal(got, want)


def test_the_trainer_selects_it_on_a_cpu_unless_switched_off(tiny_model_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_async.learner.samples import TrainSample
    from spade_async.learner.trainer import Trainer

    calls: list[int] = []
    plain = attention.short_attention

    def counted(module, query, *args, **kwargs):
        calls.append(query.shape[2])
        return plain(module, query, *args, **kwargs)

    model_cfg = ModelConfig(dtype="float32", lora_rank=4, lora_alpha=8, lora_targets=["q_proj", "v_proj"])
    on = Trainer(str(tiny_model_dir), model_cfg, LearnerConfig(micro_batch=2), seed=0)
    off = Trainer(str(tiny_model_dir), model_cfg, LearnerConfig(micro_batch=2, cpu_short_attention=False), seed=0)
    assert on.model.config._attn_implementation == CPU_SHORT_ATTENTION
    assert off.model.config._attn_implementation != CPU_SHORT_ATTENTION

    from transformers import AttentionInterface

    monkeypatch.setitem(AttentionInterface._global_mapping, CPU_SHORT_ATTENTION, counted)
    masks = [[0] * 8 + [1] * 4, [0] * 8 + [1] * 8]  # rows of 12 and 16 tokens
    samples = [TrainSample("agent", list(range(5, 5 + len(m))), m, [-2.0 * x for x in m], 1.0, 0) for m in masks]
    lp_on = on.logprobs(samples)
    assert calls and set(calls) <= {12, 16}  # every layer's self-attention over whole rows
    lp_off = off.logprobs(samples)
    for a, b in zip(lp_on, lp_off, strict=True):
        assert torch.allclose(a, b, atol=1e-4)
