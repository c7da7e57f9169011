"""engine/lean_decode.py: a Llama decode step outside transformers' forward, same logits."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest
import torch

from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.hf import HFEngine
from spade_async.engine.lean_decode import CACHE_CHUNK, DecodeCache, LeanDecoder, lean_decode_refusal
from spade_async.engine.packed import can_pack, pack_linears
from spade_async.engine.prefix_cache import cache_layers
from spade_async.testing.tiny import tiny_llama


def _left_padded(lengths: list[int], vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    width = max(lengths)
    ids = torch.zeros((len(lengths), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, width - n :] = torch.randint(3, vocab, (n,), generator=g)
        mask[i, width - n :] = 1
    return ids, mask


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lean_steps_give_transformers_logits(dtype: torch.dtype, packed: bool) -> None:
    """From one prefill of a left-padded batch, each step's logits equal a transformers forward
    over its cache (float32 1e-4; bf16 within its rounding), past a growth of the buffer."""
    if packed and not can_pack():
        pytest.skip("this torch build has no oneDNN")
    model = tiny_llama(dtype=dtype).requires_grad_(False)
    if packed:
        pack_linears(model, rows_hint=3)
    lean = LeanDecoder(model)
    ids, mask = _left_padded([5, 9, 2], 300)
    steps = CACHE_CHUNK + 4  # the buffer grows twice: at the first step and after a full chunk
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, use_cache=True)
        past = out.past_key_values
        cache = DecodeCache(cache_layers(past))
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -1:]
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        worst = 0.0
        for _ in range(steps):
            positions = positions + 1
            mask = torch.cat([mask, torch.ones((3, 1), dtype=mask.dtype)], dim=1)
            ref = model(input_ids=token, attention_mask=mask, position_ids=positions, cache=past, use_cache=True)
            past = ref.past_key_values
            got = lean.step(token, positions, mask, cache)
            expected = torch.log_softmax(ref.logits[:, -1].float(), -1)
            worst = max(worst, float((torch.log_softmax(got.float(), -1) - expected).abs().max()))
            token = expected.argmax(-1, keepdim=True)
    assert worst < (1e-4 if dtype == torch.float32 else 0.1)
    assert cache.length == mask.shape[1] and cache.capacity == mask.shape[1] - steps + 2 * CACHE_CHUNK
    for (k, v), (k_ref, v_ref) in zip(cache.layers(), cache_layers(past), strict=True):
        assert k.shape == k_ref.shape
        tolerance = 1e-5 if dtype == torch.float32 else 0.1
        assert torch.allclose(k.float(), k_ref.float(), atol=tolerance) and torch.allclose(
            v.float(), v_ref.float(), atol=tolerance
        )


def test_the_buffer_grows_by_chunks_and_free_slots_hold_zeros() -> None:
    layers = [(torch.ones(2, 1, 3, 4), torch.ones(2, 1, 3, 4)) for _ in range(2)]
    cache = DecodeCache(layers)
    assert (cache.length, cache.capacity) == (3, 3)
    assert cache.reserve() == 3 and cache.capacity == 3 + CACHE_CHUNK
    assert float(cache.keys[0][:, :, 3:].abs().sum()) == 0.0
    cache.length = 3 + CACHE_CHUNK
    assert cache.reserve() == 3 + CACHE_CHUNK and cache.capacity == 3 + 2 * CACHE_CHUNK
    assert [k.shape[2] for k, _ in cache.layers()] == [3 + CACHE_CHUNK] * 2


def test_what_it_cannot_compute_exactly_is_refused_by_name() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    qwen = Qwen2ForCausalLM(
        Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4)
    ).eval()
    assert "Qwen2ForCausalLM" in str(lean_decode_refusal(qwen))
    gelu = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            hidden_act="gelu",
        )
    ).eval()
    assert "gelu" in str(lean_decode_refusal(gelu))
    assert "training" in str(lean_decode_refusal(tiny_llama().train()))
    assert lean_decode_refusal(tiny_llama()) is None
    with pytest.raises(ValueError, match="Qwen2ForCausalLM"):
        LeanDecoder(qwen)


@pytest.mark.anyio
async def test_the_engine_decodes_with_it_and_samples_what_transformers_would(tiny_model_dir: Path) -> None:
    """`HFEngine(lean_decode=True)` runs every step after the prefill through the lean decoder;
    seeded rows sample the same tokens with the same logprobs as the engine without it, and
    the next turn, from the prefix cache the lean steps filled, does too."""
    lean = HFEngine(tiny_model_dir, seed=0, lean_decode=True)
    plain = HFEngine(tiny_model_dir, seed=0)
    assert lean.lean_decoder is not None and plain.lean_decoder is None
    steps = 0
    decoder: Any = lean.lean_decoder
    real = decoder.step

    prefill_caches: list[weakref.ref[Any]] = []  # transformers' cache of each prefill

    def counting(*args: Any) -> Any:
        nonlocal steps
        steps += 1
        # the buffer holds the prompt's keys/values now: the prefill's cache is not kept beside it
        assert [ref() for ref in prefill_caches] == [None] * len(prefill_caches)
        return real(*args)

    decoder.step = counting
    lean.model.register_forward_hook(lambda _m, _a, out: prefill_caches.append(weakref.ref(out.past_key_values)))
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (12, 30, 5)]
    new = CACHE_CHUNK + 3
    outs = {}
    for engine in (lean, plain):
        first = await engine.generate(
            [GenerationRequest(p, Sampling(max_new_tokens=new, seed=i)) for i, p in enumerate(prompts)]
        )
        more = [o.prompt_ids + o.token_ids + [7, 8, 9] for o in first]
        second = await engine.generate(
            [GenerationRequest(p, Sampling(max_new_tokens=4, seed=10 + i)) for i, p in enumerate(more)]
        )
        outs[id(engine)] = first + second
    assert steps == max(len(o.token_ids) for o in outs[id(lean)][:3]) - 1 + 3  # 4 new: 3 steps after the prefill
    assert len(lean.prefix_cache) == len(plain.prefix_cache) > 0
    for a, b in zip(outs[id(lean)], outs[id(plain)], strict=True):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
