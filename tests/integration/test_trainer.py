"""The learner end to end on CPU: it learns a bandit, its logprobs are the model's, micro-batching
does not change the update, adapters round-trip through PEFT, and resume is exact."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from spade_async.config import LearnerConfig, ModelConfig
from spade_async.learner.grpo import group_advantages
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer

LORA = ModelConfig(lora_rank=8, lora_alpha=16)


@pytest.fixture(autouse=True)
def _few_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def bandit_model_dir(tmp_path_factory) -> Path:
    """A tiny Llama with a 32-token vocabulary (token ids only, no tokenizer).

    Why not the shared tiny model: with its 49k vocabulary and std-0.02 init every token has
    p ~ 2e-5 and an RMS-normed hidden state cannot lift one token much (|logit| <= |h| |e|),
    so a bandit would never see a reward. A small vocabulary and a wider init
    (``initializer_range=0.2``) give the chosen token p0 ~ 0.03 and room to grow.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        initializer_range=0.2,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    out = tmp_path_factory.mktemp("bandit-model")
    LlamaForCausalLM(cfg).save_pretrained(str(out))
    return out


def _next_token_probs(trainer: Trainer, prompt: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return torch.softmax(trainer.model(torch.tensor([prompt])).logits[0, -1].float(), -1)


def _sample(trainer: Trainer, prompt: list[int], n: int, length: int, gen: torch.Generator):
    """Sample ``n`` completions at temperature 1 with their behaviour logprobs."""
    ids = torch.tensor([prompt] * n)
    logps = []
    with torch.no_grad():
        for _ in range(length):
            logp = torch.log_softmax(trainer.model(ids).logits[:, -1].float(), -1)
            tok = torch.multinomial(logp.exp(), 1, generator=gen)
            logps.append(logp.gather(-1, tok))
            ids = torch.cat([ids, tok], 1)
    return ids, torch.cat(logps, 1)


@pytest.mark.parametrize(("anchor", "stale"), [("proximal", False), ("proximal", True), ("behaviour", True)])
def test_grpo_learns_a_bandit(bandit_model_dir, anchor, stale):
    """reward = 1 when the completion starts with a chosen token; its probability must rise.

    ``stale``: each step trains on the previous step's samples (one version behind, like the
    async pipeline), so the TIS weights / the behaviour-anchored clip are exercised too.
    """
    trainer = Trainer(
        str(bandit_model_dir),
        LORA,
        LearnerConfig(lr=1e-3, micro_batch=8),
        seed=0,
        ratio_anchor=anchor,
    )
    prompt, group = [1, 5, 9, 3], 16
    probs = _next_token_probs(trainer, prompt)
    target = int(probs.argsort()[-5])  # the fifth most likely token: rare but sampled
    p0 = float(probs[target])
    assert p0 < 0.1
    gen = torch.Generator().manual_seed(0)
    pending: list[TrainSample] = []
    for _ in range(30):
        ids, logps = _sample(trainer, prompt, group, 2, gen)
        rewards = [float(ids[i, len(prompt)] == target) for i in range(group)]
        adv, _ = group_advantages(rewards, ["bandit"] * group)
        batch = [
            TrainSample(
                role="agent",
                input_ids=ids[i].tolist(),
                loss_mask=[0] * len(prompt) + [1, 1],
                behaviour_logprobs=[0.0] * len(prompt) + logps[i].tolist(),
                advantage=adv[i],
                adapter_version=trainer.version,
                reward=rewards[i],
            )
            for i in range(group)
        ]
        if stale:
            batch, pending = pending, batch
        metrics = trainer.train_step(batch)
        assert metrics["tis_mean"] <= 2.0
    p_final = float(_next_token_probs(trainer, prompt)[target])
    assert p_final > p0 + 0.5, (p0, p_final)


def _random_samples(n: int, seed: int, vocab: int = 49152) -> list[TrainSample]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = 10 + 3 * i
        ids = torch.randint(3, vocab, (length,), generator=g).tolist()
        mask = [0] * 4 + [1] * 3 + [0] * 2 + [1] * (length - 9)  # prompt, action, obs, action
        logps = [(-11.0 + 0.1 * j) * m for j, m in enumerate(mask)]
        adv = [1.0, -1.0, 0.5, -0.5, 2.0, -2.0][i % 6]
        out.append(
            TrainSample(
                role="designer" if i % 3 == 0 else "agent",
                input_ids=ids,
                loss_mask=mask,
                behaviour_logprobs=logps,
                advantage=adv,
                adapter_version=0,
                temperature=0.7 if i % 2 else 1.0,
            )
        )
    return out


def test_selected_logprobs_equal_full_model_logprobs(tiny_model_dir):
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(), seed=0)
    samples = _random_samples(3, seed=1)
    got = trainer.logprobs(samples)
    with torch.no_grad():
        for s, lp in zip(samples, got, strict=True):
            ids = torch.tensor([s.input_ids])
            logits = trainer.model(ids).logits[0].float() / s.temperature
            full = torch.log_softmax(logits[:-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
            expected = full[torch.tensor(s.loss_mask[1:]).bool()]
            assert torch.allclose(lp, expected, atol=1e-4)


def _lora_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("agg", ["grpo", "dapo", "dr_grpo"])
def test_micro_batching_does_not_change_the_gradient(tiny_model_dir, agg):
    """Compare Adam's first moment after one step (= 0.1 * gradient): the updated weights
    themselves are ~lr * sign(grad) after Adam's first step, which flips on float noise.
    Rows of 22, 19, 16, 13, 10 tokens: one per micro-batch, all five in one, and under a
    budget of 40 padded tokens [22], [19, 16], [13, 10]."""
    samples = _random_samples(5, seed=2)
    moments = []
    for rows, budget, expected in ((1, None, 5), (5, None, 1), (5, 40, 3)):
        cfg = LearnerConfig(lr=1e-3, micro_batch=rows, micro_batch_tokens=budget, loss_agg=agg)
        trainer = Trainer(str(tiny_model_dir), LORA, cfg, seed=0)
        assert trainer.train_step(samples)["micro_batches"] == expected
        moments.append([trainer.optimizer.state[p]["exp_avg"].clone() for p in trainer._params])
    scale = max(m.abs().max().item() for m in moments[0])
    assert scale > 0
    for other in moments[1:]:
        for x, y in zip(moments[0], other, strict=True):
            assert torch.allclose(x, y, rtol=1e-4, atol=1e-5 * scale)


def test_gradient_checkpointing_does_not_change_the_gradient(tiny_model_dir):
    """The CPU presets turn gradient checkpointing on (without it one agent transcript of ~400
    tokens holds ~1 GB of activations on SmolLM2-135M); the update must be the same."""
    samples = _random_samples(4, seed=5)
    moments = []
    for ckpt in (False, True):
        cfg = LearnerConfig(lr=1e-3, micro_batch=2, gradient_checkpointing=ckpt)
        trainer = Trainer(str(tiny_model_dir), LORA, cfg, seed=0, gradient_checkpointing=ckpt)
        assert trainer.model.get_base_model().is_gradient_checkpointing is ckpt
        trainer.train_step(samples)
        moments.append([trainer.optimizer.state[p]["exp_avg"].clone() for p in trainer._params])
    scale = max(m.abs().max().item() for m in moments[0])
    assert scale > 0
    for x, y in zip(*moments, strict=True):
        assert torch.allclose(x, y, rtol=1e-4, atol=1e-5 * scale)


def test_step_drops_untrainable_samples_and_counts_version(tiny_model_dir):
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(lr=1e-3), seed=0)
    samples = _random_samples(3, seed=3)
    no_tokens = TrainSample("agent", [5, 6, 7], [0, 0, 0], [0.0] * 3, 1.0, 0)
    only_first = TrainSample("agent", [5, 6, 7], [1, 0, 0], [-1.0, 0, 0], 1.0, 0)  # nothing predicts it
    zero_adv = TrainSample("agent", [5, 6, 7], [0, 1, 1], [0, -1.0, -1.0], 0.0, 0)
    m = trainer.train_step([*samples, no_tokens, only_first, zero_adv])
    assert m["n_samples"] == 3 and m["n_dropped"] == 3 and m["n_zero_advantage"] == 1
    assert trainer.version == 1
    for key in ("loss", "clip_fraction", "kl", "ratio_mean", "ratio_max", "tis_mean", "grad_norm"):
        assert key in m and m[key] == m[key], key  # present, not NaN
    assert m["tokens"] == sum(s.n_trained_tokens for s in samples) and m["tokens_per_s"] > 0
    empty = trainer.train_step([no_tokens])
    assert empty["n_samples"] == 0 and trainer.version == 1


def test_kl_reference_is_the_base_model_without_adapter(tiny_model_dir):
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(lr=1e-2, kl_coef=0.1), seed=0)
    samples = _random_samples(3, seed=4)
    first = trainer.train_step(samples)
    assert first["kl"] == pytest.approx(0.0, abs=1e-7)  # LoRA B starts at 0: policy == reference
    second = trainer.train_step(samples)
    assert second["kl"] > 1e-6


def test_saved_adapter_loads_with_peft_and_reproduces_logits(tiny_model_dir, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(lr=1e-2), seed=0)
    samples = _random_samples(4, seed=5)
    for _ in range(2):
        trainer.train_step(samples)
    target = tmp_path / "adapters" / "v2"
    trainer.save_adapter(target)
    trainer.save_adapter(target)  # overwriting an existing version is atomic too
    assert (target / "adapter_model.safetensors").exists()
    assert json.loads((target / "adapter_config.json").read_text())["r"] == 8
    assert [p.name for p in target.parent.iterdir()] == ["v2"]  # no temp leftovers

    ids = torch.tensor([samples[-1].input_ids])
    trainer.model.eval()
    with torch.no_grad():
        trained = trainer.model(ids).logits
        with trainer.model.disable_adapter():
            base_logits = trainer.model(ids).logits
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), local_files_only=True)
    loaded = PeftModel.from_pretrained(base, str(target)).eval()
    with torch.no_grad():
        reloaded = loaded(ids).logits
    assert (trained - base_logits).abs().max() > 1e-3  # the adapter did change the model
    assert torch.allclose(reloaded, trained, atol=1e-5)


def test_resume_is_exact(tiny_model_dir, tmp_path):
    cfg = LearnerConfig(lr=1e-2)
    samples = _random_samples(4, seed=6)
    a = Trainer(str(tiny_model_dir), LORA, cfg, seed=0)
    a.train_step(samples)
    a.train_step(samples)
    state = a.state_dict()
    a.save_adapter(tmp_path / "v2")

    b = Trainer(str(tiny_model_dir), LORA, cfg, seed=1)  # different LoRA init, then overwritten
    b.load_state_dict(state)
    assert b.version == 2
    ma, mb = a.train_step(samples), b.train_step(samples)
    assert ma["loss"] == pytest.approx(mb["loss"], rel=1e-6)
    wa, wb = _lora_weights(a), _lora_weights(b)
    for name, w in wa.items():
        assert torch.allclose(w, wb[name], atol=1e-7), name

    c = Trainer(str(tiny_model_dir), LORA, cfg, seed=2)
    c.load_adapter_weights(tmp_path / "v2")
    b2 = Trainer(str(tiny_model_dir), LORA, cfg, seed=3)
    b2.load_state_dict(state)
    for x, y in zip(c.logprobs(samples), b2.logprobs(samples), strict=True):
        assert torch.allclose(x, y, atol=1e-6)


def test_ppo_epochs_activate_the_clip(tiny_model_dir):
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(lr=5e-2, ppo_epochs=3), seed=0)
    m = trainer.train_step(_random_samples(4, seed=7))
    assert trainer.version == 1
    assert m["clip_fraction"] > 0.0  # epochs 2-3 are measured against epoch 0's logprobs


def test_non_finite_gradient_skips_the_optimizer_step(tiny_model_dir):
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(lr=1e-2), seed=0)
    bad = _random_samples(2, seed=8)
    bad[0].behaviour_logprobs[5] = float("nan")  # a corrupt behaviour logprob on a trained token
    before = _lora_weights(trainer)
    m = trainer.train_step(bad)
    assert m["nonfinite_skipped"] == 1.0
    after = _lora_weights(trainer)
    assert all(torch.equal(before[n], after[n]) for n in before)
    ok = trainer.train_step(_random_samples(2, seed=9))
    assert ok["nonfinite_skipped"] == 0.0 and ok["grad_norm"] > 0


def test_construction_leaves_the_global_rng_alone(tiny_model_dir):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = Trainer(str(tiny_model_dir), LORA, LearnerConfig(), seed=0)
    assert torch.equal(torch.rand(3), expected)
    b = Trainer(str(tiny_model_dir), LORA, LearnerConfig(), seed=0)
    wa, wb = _lora_weights(a), _lora_weights(b)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)  # same seed, same LoRA init


def test_qlora_without_bitsandbytes_names_both_extras(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # as in the default install
    with pytest.raises(ImportError, match=r"spade-async\[vllm-cpu\]") as err:
        Trainer(str(tiny_model_dir), ModelConfig(qlora=True), LearnerConfig(), device="cpu")
    assert "spade-async[vllm]" in str(err.value)


def test_qlora_refuses_a_device_that_is_neither_cuda_nor_cpu(tiny_model_dir):
    with pytest.raises(ValueError, match="CUDA device or the CPU"):
        Trainer(str(tiny_model_dir), ModelConfig(qlora=True), LearnerConfig(), device="mps")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_qlora_step_on_cuda(tiny_model_dir, tmp_path):
    pytest.importorskip("bitsandbytes")
    trainer = Trainer(str(tiny_model_dir), ModelConfig(qlora=True, lora_rank=8), LearnerConfig(), device="cuda")
    m = trainer.train_step(_random_samples(3, seed=10))
    assert m["grad_norm"] > 0 and trainer.version == 1
    trainer.save_adapter(tmp_path / "v1")
    assert (tmp_path / "v1" / "adapter_model.safetensors").exists()


def test_checkpoint_rng_touches_only_the_learners_gpu(tiny_model_dir, monkeypatch):
    """A learner on cuda:1 saves and restores cuda:1's generator and no other GPU's (asking
    every GPU for its state opens a CUDA context on each, taking memory from the engine's)."""
    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(), seed=0)
    touched: list[tuple[str, object]] = []

    def all_gpus(*_a: object) -> None:
        raise AssertionError("touched every GPU")

    monkeypatch.setattr(torch.cuda, "get_rng_state_all", all_gpus)
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", all_gpus)
    monkeypatch.setattr(
        torch.cuda, "get_rng_state", lambda device: touched.append(("get", device)) or torch.tensor([7])
    )
    monkeypatch.setattr(
        torch.cuda, "set_rng_state", lambda state, device: touched.append(("set", device, int(state[0])))
    )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    trainer.device = "cuda:1"  # state_dict/load_state_dict only; no tensor moves
    state = trainer.state_dict()
    trainer.load_state_dict(state)
    state["cuda_rng"] = [torch.tensor([5]), torch.tensor([6])]  # a checkpoint from before: every GPU's state
    trainer.load_state_dict(state)
    assert touched == [
        ("get", torch.device("cuda:1")),
        ("set", torch.device("cuda:1"), 7),
        ("set", torch.device("cuda:1"), 6),
    ]
    trainer.device = "cpu"
    touched.clear()
    assert "cuda_rng" not in trainer.state_dict() and touched == []


def test_step_reports_engine_learner_agreement_on_same_adapter_tokens(tiny_model_dir):
    """Behaviour logprobs equal to the learner's own give a zero gap; shifted by 0.3 give 0.3;
    tokens from another adapter version are not compared."""
    import dataclasses

    trainer = Trainer(str(tiny_model_dir), LORA, LearnerConfig(micro_batch=2), seed=0)
    samples = _random_samples(4, seed=3)
    own = trainer.logprobs(samples)

    def with_behaviour(shift: float, version: int) -> list[TrainSample]:
        out = []
        for s, lp in zip(samples, own, strict=True):
            it = iter(lp.tolist())
            logps = [next(it) + shift if m else 0.0 for m in [0, *s.loss_mask[1:]]]
            out.append(dataclasses.replace(s, behaviour_logprobs=logps, adapter_version=version))
        return out

    exact = Trainer(str(tiny_model_dir), LORA, LearnerConfig(micro_batch=2), seed=0).train_step(with_behaviour(0.0, 0))
    assert exact["onpolicy_tokens"] == sum(len(lp) for lp in own)
    assert exact["onpolicy_lp_absdiff_mean"] < 1e-4 and exact["onpolicy_lp_absdiff_p99"] < 1e-4
    assert abs(exact["onpolicy_ratio_p01"] - 1) < 1e-4 and abs(exact["onpolicy_ratio_p99"] - 1) < 1e-4
    shifted = Trainer(str(tiny_model_dir), LORA, LearnerConfig(micro_batch=2), seed=0).train_step(
        with_behaviour(0.3, 0)
    )
    assert abs(shifted["onpolicy_lp_absdiff_mean"] - 0.3) < 1e-3
    assert abs(shifted["onpolicy_ratio_p99"] - math.exp(-0.3)) < 1e-3
    stale = Trainer(str(tiny_model_dir), LORA, LearnerConfig(micro_batch=2), seed=0).train_step(with_behaviour(0.0, 5))
    assert stale["onpolicy_tokens"] == 0 and "onpolicy_lp_absdiff_mean" not in stale
