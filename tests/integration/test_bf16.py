"""bfloat16 on the CPU: a bf16 learner step computes the float32 step's loss and gradients, keeps
its LoRA weights and Adam moments in float32, and a bf16 engine and a bf16 learner agree on
the tokens the engine sampled (the on-policy gap stays inside the bf16 bound).

The dtype is pinned in every test here, so they run the same on a CPU with bf16 instructions
and on one without (where torch emulates bf16: slower, same numbers)."""

from __future__ import annotations

import pytest
import torch

from spade_async.config import EngineConfig, LearnerConfig, ModelConfig
from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.hf import HFEngine
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer

LORA = {"lora_rank": 8, "lora_alpha": 16}
LOSS_RTOL = 0.02
"""bf16 keeps 8 mantissa bits (relative step 2^-8 ~ 0.4% per rounding); a loss summed over
~100 tokens through two layers lands within 2% of float32 (measured on the tiny model: 0.36%)."""
GRAD_COSINE = 0.99
"""Gradient direction, all LoRA parameters flattened (measured: 0.99996)."""
GRAD_NORM_RTOL = 0.05
"""Gradient norm, bf16 / float32 - 1 (measured: -0.05%)."""
ONPOLICY_BOUND = 0.15
"""The issue's bound on the mean |engine - learner| logprob gap when both sides run bf16."""


def _samples(n: int, seed: int, vocab: int = 49152) -> list[TrainSample]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = 24 + 5 * i
        ids = torch.randint(3, vocab, (length,), generator=g).tolist()
        mask = [0] * 6 + [1] * (length - 6)
        out.append(
            TrainSample(
                role="agent",
                input_ids=ids,
                loss_mask=mask,
                behaviour_logprobs=[-10.8 * m for m in mask],
                advantage=[1.0, -1.0, 0.5, -0.5][i % 4],
                adapter_version=0,
            )
        )
    return out


def _nonzero_lora(trainer: Trainer, seed: int) -> dict[str, torch.Tensor]:
    """An adapter state with both LoRA factors nonzero (a fresh B is zero, so A has no gradient)."""
    g = torch.Generator().manual_seed(seed)
    state = trainer.state_dict()["adapter"]
    return {k: 0.05 * torch.randn(v.shape, generator=g) for k, v in state.items()}


def _step_with_grads(trainer: Trainer, samples: list[TrainSample]) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """One ``train_step``, with the gradient each trainable parameter received (summed over
    micro-batches, before clipping) caught by hooks on the parameters themselves."""
    grads: dict[str, torch.Tensor] = {}
    hooks = []
    for name, p in trainer.model.named_parameters():
        if p.requires_grad:

            def keep(g: torch.Tensor, name: str = name) -> None:
                grads[name] = grads.get(name, torch.zeros_like(g, dtype=torch.float32)) + g.float()

            hooks.append(p.register_hook(keep))
    try:
        metrics = trainer.train_step(samples)
    finally:
        for h in hooks:
            h.remove()
    return metrics, grads


def test_a_bf16_learner_step_matches_the_float32_step_on_the_same_batch(tiny_model_dir):
    f32 = Trainer(str(tiny_model_dir), ModelConfig(dtype="float32", **LORA), LearnerConfig(micro_batch=2), seed=0)
    b16 = Trainer(str(tiny_model_dir), ModelConfig(dtype="bfloat16", **LORA), LearnerConfig(micro_batch=2), seed=0)
    adapter = _nonzero_lora(f32, seed=1)
    f32.load_state_dict({**f32.state_dict(), "adapter": adapter})
    b16.load_state_dict({**b16.state_dict(), "adapter": adapter})

    base = [p for n, p in b16.model.named_parameters() if not p.requires_grad and "embed" not in n]
    assert base and all(p.dtype == torch.bfloat16 for p in base)  # the base computes in bf16
    assert all(p.dtype == torch.float32 for p in b16._params)  # LoRA master weights stay float32

    samples = _samples(4, seed=2)
    m32, g32 = _step_with_grads(f32, samples)
    m16, g16 = _step_with_grads(b16, samples)
    assert m32["tokens"] == m16["tokens"] > 0
    assert abs(m16["loss"] - m32["loss"]) <= LOSS_RTOL * abs(m32["loss"]), (m16["loss"], m32["loss"])
    assert g32.keys() == g16.keys() and len(g32) > 0
    flat32 = torch.cat([g32[k].flatten() for k in sorted(g32)])
    flat16 = torch.cat([g16[k].flatten() for k in sorted(g16)])
    cosine = torch.nn.functional.cosine_similarity(flat32, flat16, dim=0).item()
    assert cosine > GRAD_COSINE, cosine
    assert abs(flat16.norm() / flat32.norm() - 1) < GRAD_NORM_RTOL
    moments = [s["exp_avg"] for s in b16.optimizer.state.values()]
    assert moments and all(t.dtype == torch.float32 for t in moments)  # Adam state in float32


def test_a_bf16_learner_multiplies_its_lora_in_bf16_under_autocast(tiny_model_dir):
    """On a CPU the bf16 learner's forward runs under bf16 autocast and PEFT's upcast of each
    adapted layer's input to float32 is off: a LoRA factor sees a bf16 input (a float32 one
    would mean the slow path: a copy per layer and float32 matmuls)."""
    b16 = Trainer(str(tiny_model_dir), ModelConfig(dtype="bfloat16", **LORA), LearnerConfig(micro_batch=2), seed=0)
    f32 = Trainer(str(tiny_model_dir), ModelConfig(dtype="float32", **LORA), LearnerConfig(micro_batch=2), seed=0)
    assert b16.cpu_autocast and not f32.cpu_autocast
    seen: list[torch.dtype] = []
    lora_a = next(m for n, m in b16.model.named_modules() if n.endswith("lora_A.default"))
    lora_a.register_forward_hook(lambda _m, args, _out: seen.append(args[0].dtype))
    metrics = b16.train_step(_samples(2, seed=3))
    assert metrics["tokens"] > 0 and seen and set(seen) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in b16._params)  # the master weights are still float32
    seen.clear()
    with torch.no_grad():  # outside the learner's own forwards the model is plain PEFT (it upcasts)
        b16.model(torch.tensor([[5, 6, 7, 8]]))
    assert set(seen) == {torch.float32}


@pytest.mark.anyio
async def test_a_bf16_engine_and_a_bf16_learner_agree_on_the_engines_tokens(tiny_model_dir, tmp_path):
    """After one update (so the engine serves a real adapter), the engine (as a run builds it on
    a CPU) samples under v1 and the learner, holding v1, scores the same tokens: the step's
    on-policy gap is the bf16 one."""
    learner = Trainer(
        str(tiny_model_dir), ModelConfig(dtype="bfloat16", **LORA), LearnerConfig(micro_batch=2, lr=1e-2), seed=0
    )
    learner.train_step(_samples(4, seed=3))
    learner.save_adapter(tmp_path / "v1")
    run = EngineConfig()  # the CPU decode switches a run turns on (packed weights, lean steps)
    engine = HFEngine(
        tiny_model_dir,
        dtype="bfloat16",
        seed=0,
        prepack=run.cpu_prepack,
        decode_attention=run.cpu_decode_attention,
        lean_decode=run.cpu_lean_decode,
        ragged_prefill=run.cpu_ragged_prefill,
    )
    await engine.load_adapter(learner.version, str(tmp_path / "v1"))
    prompts = [engine.chat_prompt([{"role": "user", "content": f"Play game {i}: \\boxed{{guess}}"}]) for i in range(4)]
    outs = await engine.generate([GenerationRequest(p, Sampling(temperature=1.0, max_new_tokens=24)) for p in prompts])
    samples = [
        TrainSample(
            role="agent",
            input_ids=[*o.prompt_ids, *o.token_ids],
            loss_mask=[0] * len(o.prompt_ids) + [1] * len(o.token_ids),
            behaviour_logprobs=[0.0] * len(o.prompt_ids) + list(o.logprobs),
            advantage=1.0 if i % 2 else -1.0,
            adapter_version=engine.adapter_version,
        )
        for i, o in enumerate(outs)
    ]
    metrics = learner.train_step(samples)
    assert metrics["onpolicy_tokens"] == sum(len(o.token_ids) for o in outs) > 0
    assert metrics["onpolicy_lp_absdiff_mean"] < ONPOLICY_BOUND, metrics
