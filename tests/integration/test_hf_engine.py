"""HF engine on the tiny model: logprobs equal a forward pass, batching, stops, adapters."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import torch

from spade_async.engine.base import Engine, GenerationRequest, Sampling
from spade_async.engine.hf import HFEngine

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def engine(tiny_model_dir: Path) -> HFEngine:
    torch.manual_seed(0)
    return HFEngine(tiny_model_dir, seed=0)


def forward_logprobs(engine: HFEngine, prompt: list[int], tokens: list[int], temperature: float) -> list[float]:
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = engine.model(ids).logits[0].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return [logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(tokens)]


def test_satisfies_protocol(engine: HFEngine) -> None:
    assert isinstance(engine, Engine)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
async def test_logprobs_match_a_forward_pass(engine: HFEngine, temperature: float) -> None:
    prompt = engine.chat_prompt([{"role": "user", "content": "Play: \\boxed{guess 50}"}])
    short = prompt[:7]  # a shorter prompt in the same batch exercises left padding
    outs = await engine.generate(
        [GenerationRequest(p, Sampling(temperature=temperature, max_new_tokens=10)) for p in (prompt, short)]
    )
    for out in outs:
        assert len(out.token_ids) == len(out.logprobs) > 0
        ref = forward_logprobs(engine, out.prompt_ids, out.token_ids, temperature)
        assert max(abs(a - b) for a, b in zip(ref, out.logprobs, strict=True)) < 1e-4
        assert out.adapter_version == 0


async def test_max_new_tokens_and_finish_reason(engine: HFEngine) -> None:
    out = (await engine.generate([GenerationRequest([1, 2, 3], Sampling(max_new_tokens=5))]))[0]
    assert len(out.token_ids) <= 5
    assert out.finish_reason in ("length", "stop")
    if out.finish_reason == "length":
        assert len(out.token_ids) == 5


async def test_top_p_logprobs_are_under_the_truncated_distribution(engine: HFEngine) -> None:
    out = (await engine.generate([GenerationRequest([1, 2, 3], Sampling(top_p=0.5, max_new_tokens=6))]))[0]
    full = forward_logprobs(engine, out.prompt_ids, out.token_ids, 1.0)
    # Renormalising over the nucleus can only raise a kept token's probability.
    assert all(lp >= f - 1e-5 for lp, f in zip(out.logprobs, full, strict=True))


async def test_seeded_requests_reproduce(engine: HFEngine) -> None:
    req = GenerationRequest([5, 6, 7], Sampling(max_new_tokens=8, seed=123))
    a = (await engine.generate([req]))[0]
    b = (await engine.generate([req]))[0]
    assert a.token_ids == b.token_ids


async def test_concurrent_callers_are_batched(engine: HFEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    results: dict[int, int] = {}
    batch_sizes: list[int] = []
    forward = engine._generate_batch

    def counting(requests: list[GenerationRequest]) -> list:
        batch_sizes.append(len(requests))
        return forward(requests)

    monkeypatch.setattr(engine, "_generate_batch", counting)

    async def one(i: int) -> None:
        out = await engine.generate([GenerationRequest([10 + i, 11, 12], Sampling(max_new_tokens=4))])
        results[i] = len(out[0].token_ids)

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(one, i)
    assert sorted(results) == list(range(6))
    # Six concurrent single-request callers: the model ran fewer, larger batches, not six.
    assert sum(batch_sizes) == 6 and len(batch_sizes) < 6 and max(batch_sizes) > 1


async def test_stop_string_ends_completion(engine: HFEngine) -> None:
    # Find what the model says first, then use its first character as a stop string.
    probe = (await engine.generate([GenerationRequest([1, 2, 3], Sampling(max_new_tokens=6, seed=7))]))[0]
    text = probe.text
    if not text.strip():
        pytest.fail("tiny model produced no visible text to test stops with")
    stop = text.strip()[0]
    out = (await engine.generate([GenerationRequest([1, 2, 3], Sampling(max_new_tokens=6, seed=7, stop=(stop,)))]))[0]
    assert out.finish_reason == "stop"
    assert out.text.endswith(stop)
    assert len(out.token_ids) <= len(probe.token_ids)


async def test_too_long_prompt_is_a_clear_error(engine: HFEngine) -> None:
    with pytest.raises(ValueError, match="max_model_len"):
        await engine.generate([GenerationRequest([1] * 5000, Sampling(max_new_tokens=4))])


async def test_load_adapter_changes_generations(tiny_model_dir: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    engine = HFEngine(tiny_model_dir, seed=0)
    prompt = [1, 2, 3, 4]
    before = forward_logprobs(engine, prompt, [42], 1.0)[0]
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    peft_model = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    peft_model.save_pretrained(str(tmp_path / "v1"))
    await engine.load_adapter(1, str(tmp_path / "v1"))
    assert engine.adapter_version == 1
    out = (await engine.generate([GenerationRequest(prompt, Sampling(max_new_tokens=3))]))[0]
    assert out.adapter_version == 1
    after = forward_logprobs(engine, prompt, [42], 1.0)[0]
    assert abs(after - before) > 1e-4
    # A second version replaces the first.
    peft2 = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], init_lora_weights=False),
    )
    peft2.save_pretrained(str(tmp_path / "v2"))
    await engine.load_adapter(2, str(tmp_path / "v2"))
    assert engine.adapter_version == 2
    assert engine.adapted_layers == 2  # q_proj of the tiny model's 2 layers: v1's v_proj deltas are gone
    from peft import PeftModel

    reference = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), str(tmp_path / "v2")
    )
    with torch.no_grad():
        want = torch.log_softmax(reference(torch.tensor([[*prompt, 42]])).logits[0].float(), dim=-1)[-2, 42].item()
    assert abs(forward_logprobs(engine, prompt, [42], 1.0)[0] - want) < 1e-4


async def test_prefix_cache_reuses_history_with_exact_logprobs(tiny_model_dir: Path) -> None:
    engine = HFEngine(tiny_model_dir, seed=0)
    first = [
        engine.chat_prompt([{"role": "user", "content": "Turn one of a long game."}]),
        engine.chat_prompt([{"role": "user", "content": "Another, shorter game"}]),
    ]
    outs = await engine.generate([GenerationRequest(p, Sampling(max_new_tokens=6)) for p in first])
    assert len(engine.prefix_cache) == 2 and engine.prefix_cache.hits == 0
    seam = engine.encode("<|im_end|>\n<|im_start|>user\nNext observation<|im_end|>\n<|im_start|>assistant\n")
    second = [o.prompt_ids + o.token_ids + seam for o in outs]
    fresh = engine.chat_prompt([{"role": "user", "content": "A brand new episode with no history at all"}])
    later = await engine.generate([GenerationRequest(p, Sampling(max_new_tokens=5)) for p in [*second, fresh]])
    assert engine.prefix_cache.hits == 2
    for out in later:  # cached rows, different cached lengths, and a fresh row in one batch
        ref = forward_logprobs(engine, out.prompt_ids, out.token_ids, 1.0)
        assert max(abs(a - b) for a, b in zip(ref, out.logprobs, strict=True)) < 1e-4


async def test_prefix_cache_is_dropped_when_the_adapter_changes(tiny_model_dir: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    engine = HFEngine(tiny_model_dir, seed=0)
    await engine.generate([GenerationRequest([1, 2, 3, 4], Sampling(max_new_tokens=3))])
    assert len(engine.prefix_cache) == 1
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
        LoraConfig(r=4, target_modules=["q_proj"], init_lora_weights=False),
    )
    model.save_pretrained(str(tmp_path / "v1"))
    await engine.load_adapter(1, str(tmp_path / "v1"))
    assert len(engine.prefix_cache) == 0


async def test_prefix_cache_respects_its_memory_budget(tiny_model_dir: Path) -> None:
    engine = HFEngine(tiny_model_dir, seed=0, prefix_cache_bytes=200_000)
    for i in range(6):
        await engine.generate([GenerationRequest([10 + i] * 50, Sampling(max_new_tokens=4))])
    assert 0 < len(engine.prefix_cache) < 6
    assert engine.prefix_cache.nbytes <= 200_000


async def test_a_completion_that_repeats_itself_stops_at_the_loop(engine: HFEngine) -> None:
    """With the strictest check (one token, twice) a row stops at its first repeated token;
    the row beside it in the same batch, without the check, runs to its limit."""
    looped, free = await engine.generate(
        [
            GenerationRequest([1, 2, 3], Sampling(max_new_tokens=200, loop_ngram=1, loop_repeats=2, seed=1)),
            GenerationRequest([1, 2, 3], Sampling(max_new_tokens=40, seed=2)),
        ]
    )
    assert looped.finish_reason == "loop"
    *before, last = looped.token_ids
    assert last in before and len(set(before)) == len(before)  # stopped at the first repeat, not later
    assert len(looped.logprobs) == len(looped.token_ids) < 200
    assert free.finish_reason in ("length", "stop") and len(free.token_ids) <= 40


async def test_the_run_s_engine_decodes_from_packed_weights_with_the_same_logprobs(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """`build_engine` (what a run calls) packs the CPU engine's linears (`engine.cpu_prepack`,
    on by default) and decodes with its own attention (`engine.cpu_decode_attention`) and its
    own decode step (`engine.cpu_lean_decode`); its logprobs, with and without an adapter, are those of a plain forward pass (SDPA) on an
    unpacked copy."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from spade_async.config import Config
    from spade_async.engine.attention import CPU_DECODE_ATTENTION
    from spade_async.engine.factory import build_engine
    from spade_async.engine.packed import PackedLinear, SiblingLinear, can_pack

    if not can_pack():
        pytest.skip("this torch build has no oneDNN")
    cfg = Config.model_validate({"run": {"device": "cpu"}, "model": {"dtype": "float32"}})
    engine = build_engine(cfg, str(tiny_model_dir))
    assert isinstance(engine, HFEngine)
    packed = sum(isinstance(m, PackedLinear | SiblingLinear) for m in engine.model.modules())
    assert engine.packed_linears == packed > sum(isinstance(m, PackedLinear) for m in engine.model.modules()) > 0
    assert engine.model.config._attn_implementation == CPU_DECODE_ATTENTION  # decode steps: engine/attention.py
    assert engine.ragged_prefill  # engine.cpu_ragged_prefill: long prompts of unequal length prefill row by row
    assert engine.lean_decoder is not None  # engine.cpu_lean_decode: steps outside transformers' forward
    off = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"cpu_prepack": False})})
    plain = build_engine(off, str(tiny_model_dir))
    assert isinstance(plain, HFEngine) and plain.packed_linears == 0

    peft_model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "up_proj"], init_lora_weights=False),
    )
    peft_model.save_pretrained(str(tmp_path / "v1"))
    prompt = [1, 2, 3, 4, 5]
    for version in (0, 1):
        if version:
            await engine.load_adapter(1, str(tmp_path / "v1"))
            await plain.load_adapter(1, str(tmp_path / "v1"))
        outs = await engine.generate(  # the shorter prompt is left-padded: decode steps attend under a mask
            [GenerationRequest(p, Sampling(max_new_tokens=8, seed=3)) for p in (prompt, prompt[:2])]
        )
        for out in outs:
            ref = forward_logprobs(plain, out.prompt_ids, out.token_ids, 1.0)
            assert max(abs(a - b) for a, b in zip(ref, out.logprobs, strict=True)) < 1e-4


async def test_prompts_of_unequal_length_prefill_row_by_row_with_the_same_logprobs(tiny_model_dir: Path) -> None:
    """`ragged_prefill`: rows with more than 64 new tokens of a mostly-padding batch run alone
    first (counted as extra forward passes), fresh and from a cached prefix; seeded rows give
    the tokens and logprobs of the one padded prefill."""
    ragged = HFEngine(tiny_model_dir, seed=0, ragged_prefill=True)
    padded = HFEngine(tiny_model_dir, seed=0)
    assert ragged.ragged_prefill and not padded.ragged_prefill
    forwards = {id(ragged): 0, id(padded): 0}
    for engine in (ragged, padded):
        real = engine.model.forward

        def counting(*args: object, _real=real, _key=id(engine), **kwargs: object) -> object:
            forwards[_key] += 1
            return _real(*args, **kwargs)

        engine.model.forward = counting  # type: ignore[method-assign]
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (160, 70, 20)]
    first = [GenerationRequest(p, Sampling(max_new_tokens=6, seed=i)) for i, p in enumerate(prompts)]
    outs = {}
    for engine in (ragged, padded):
        before = forwards[id(engine)]
        outs[id(engine)] = await engine.generate(first)
        forwards[id(engine)] -= before + 6  # what the batch's own prefill and decode steps cost
    assert forwards == {id(ragged): 2, id(padded): 0}  # the 160- and 70-token rows, alone; not the 20-token one
    for a, b in zip(outs[id(ragged)], outs[id(padded)], strict=True):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
        ref = forward_logprobs(padded, a.prompt_ids, a.token_ids, 1.0)
        assert max(abs(x - y) for x, y in zip(ref, a.logprobs, strict=True)) < 1e-4
    # the next turn: each row extends its cached transcript by 100 tokens (a partial hit)
    more = torch.randint(3, 200, (100,), generator=g).tolist()
    second = [
        GenerationRequest(o.prompt_ids + o.token_ids + more, Sampling(max_new_tokens=4, seed=7))
        for o in outs[id(ragged)]
    ]
    before = forwards[id(ragged)]
    again = await ragged.generate([*second[:1], GenerationRequest(prompts[2], Sampling(max_new_tokens=4, seed=8))])
    ref = forward_logprobs(padded, again[0].prompt_ids, again[0].token_ids, 1.0)
    assert (
        ragged.prefix_cache.hits > 0 and forwards[id(ragged)] - before == 1 + 4
    )  # the extended row alone, then 4 steps
    assert max(abs(x - y) for x, y in zip(ref, again[0].logprobs, strict=True)) < 1e-4


def test_rows_prefill_alone_only_when_padding_would_be_over_a_quarter() -> None:
    from spade_async.engine.hf import _mostly_padding

    assert _mostly_padding([992, 816, 656, 496])  # 25.4% padding: four design prompts
    assert not _mostly_padding([300] * 16) and not _mostly_padding([1000])
    assert not _mostly_padding([100, 80])  # 10%


async def test_a_batch_decodes_as_a_counted_stage_with_its_share_of_the_cores(tiny_model_dir: Path) -> None:
    """The engine runs each batch through the CPU share (hardware/cpu_share.py): counted as a
    running stage, with the cores' share as its thread count, and uncounted afterwards."""
    from spade_async.hardware.cpu_share import CPU_SHARE

    engine = HFEngine(tiny_model_dir, seed=0)
    seen: list[tuple[int, int]] = []
    real = engine._generate_batch

    def recording(requests: list[GenerationRequest]) -> list:
        seen.append((CPU_SHARE.running, torch.get_num_threads()))
        return real(requests)

    engine._generate_batch = recording  # type: ignore[method-assign]
    cores = torch.get_num_threads()  # a lone stage takes them all: the worker thread keeps its count
    CPU_SHARE.configure(cores)
    try:
        await engine.generate([GenerationRequest([1, 2, 3], Sampling(max_new_tokens=2))])
    finally:
        CPU_SHARE.configure(None)
    assert seen == [(1, cores)]
    assert CPU_SHARE.running == 0


async def test_an_adapter_with_designer_weights_serves_them_to_the_designer_side_only(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """``learner.adapters = "per_role"``: an adapter folder with a ``designer/`` subfolder. Designer
    and hint requests are computed with the designer's weights, every other request with the
    folder's own, also when both come in at once and after each other (each side's prefix cache)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    def random_adapter(folder: Path, seed: int) -> None:
        torch.manual_seed(seed)
        model = get_peft_model(
            AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
            LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
        )
        model.save_pretrained(str(folder))

    random_adapter(tmp_path / "v1", 1)
    random_adapter(tmp_path / "v1" / "designer", 2)
    random_adapter(tmp_path / "designer_alone", 2)
    engine = HFEngine(tiny_model_dir, seed=0)
    await engine.load_adapter(1, str(tmp_path / "v1"))
    agent_ref, designer_ref = HFEngine(tiny_model_dir, seed=0), HFEngine(tiny_model_dir, seed=0)
    await agent_ref.load_adapter(1, str(tmp_path / "v1"))  # scored by a plain forward: the agent's weights
    await designer_ref.load_adapter(1, str(tmp_path / "designer_alone"))
    prompt = engine.chat_prompt([{"role": "user", "content": "Write a game"}])

    def request(role: str, seed: int) -> GenerationRequest:
        return GenerationRequest(prompt, Sampling(temperature=1.0, max_new_tokens=6, seed=seed), role=role)

    for _ in range(2):  # the second round decodes from each side's cached prefix
        outs = await engine.generate([request("agent", 1), request("designer", 2), request("hint", 3)])
        for out, ref in zip(outs, (agent_ref, designer_ref, designer_ref), strict=True):
            want = forward_logprobs(ref, out.prompt_ids, out.token_ids, 1.0)
            assert max(abs(a - b) for a, b in zip(want, out.logprobs, strict=True)) < 1e-4
        agent_lp = forward_logprobs(agent_ref, prompt, outs[1].token_ids, 1.0)
        assert max(abs(a - b) for a, b in zip(agent_lp, outs[1].logprobs, strict=True)) > 1e-3  # not the agent's
        assert all(o.adapter_version == 1 for o in outs)
    assert len(engine.prefix_cache) >= 1 and len(engine.designer_prefix_cache) >= 1
    # A folder without designer/ serves its one adapter to both sides again.
    random_adapter(tmp_path / "v2", 3)
    await engine.load_adapter(2, str(tmp_path / "v2"))
    await agent_ref.load_adapter(2, str(tmp_path / "v2"))
    out = (await engine.generate([request("designer", 4)]))[0]
    want = forward_logprobs(agent_ref, out.prompt_ids, out.token_ids, 1.0)
    assert max(abs(a - b) for a, b in zip(want, out.logprobs, strict=True)) < 1e-4
