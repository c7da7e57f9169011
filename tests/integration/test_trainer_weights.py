"""A designer sample weighs one typical agent sequence in the trainer's loss, not its token count.

Through ``Trainer.train_step`` (not the loss function alone): the trainer must pass each
micro-batch's token weights and the whole optimizer batch's total weight to the loss. On
the first PPO epoch the ratio and the importance weight are 1 (behaviour logprobs are the
model's own), so the ``dapo`` loss is exactly ``-sum(weight * advantage) / total weight``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spade_async.config import LearnerConfig, ModelConfig
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def small_model_dir(tmp_path_factory) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        pad_token_id=0,
    )
    out = tmp_path_factory.mktemp("weights-model")
    LlamaForCausalLM(cfg).save_pretrained(str(out))
    return out


def sample(role: str, n_prompt: int, n_trained: int, advantage: float, offset: int) -> TrainSample:
    ids = [(offset + i) % 29 + 3 for i in range(n_prompt + n_trained)]
    mask = [0] * n_prompt + [1] * n_trained
    return TrainSample(
        role=role,
        input_ids=ids,
        loss_mask=mask,
        behaviour_logprobs=[0.0] * len(ids),  # type: ignore[arg-type]
        advantage=advantage,
        adapter_version=0,
    )


@pytest.mark.parametrize("micro_batch", [1, 4])
def test_a_long_design_weighs_one_agent_sequence_in_the_trainer_loss(small_model_dir: Path, micro_batch: int) -> None:
    trainer = Trainer(
        str(small_model_dir),
        ModelConfig(lora_rank=4, lora_alpha=8),
        LearnerConfig(micro_batch=micro_batch, loss_agg="dapo", ppo_epochs=1, kl_coef=0.0),
        seed=0,
    )
    agent_a = sample("agent", 2, 4, 1.0, 0)
    agent_b = sample("agent", 2, 6, -1.0, 5)
    design = sample("designer", 2, 30, 2.0, 11)
    samples = [agent_a, agent_b, design]
    for s, lp in zip(samples, trainer.logprobs(samples), strict=True):  # behaviour = the model itself: ratio 1, TIS 1
        trained = [i for i, m in enumerate(s.loss_mask) if m]
        for i, v in zip(trained, lp.tolist(), strict=True):
            s.behaviour_logprobs[i] = v
    metrics = trainer.train_step(samples)
    # The design's 30 tokens share the weight of one mean agent sequence: (4 + 6) / 2 = 5.
    expected = -(4 * 1.0 + 6 * -1.0 + 5 * 2.0) / (4 + 6 + 5)
    assert metrics["loss"] == pytest.approx(expected, abs=1e-4)
    assert metrics["tokens"] == 40.0


def test_a_replay_step_updates_the_weights_in_the_same_version_and_keeps_the_rate(small_model_dir: Path) -> None:
    """``supervised_step(new_version=False)``: the warm start's replay after a GRPO step."""
    trainer = Trainer(str(small_model_dir), ModelConfig(lora_rank=4, lora_alpha=8), LearnerConfig(lr=1e-4), seed=0)
    pairs = [sample("designer", 3, 8, 0.0, 2)]
    before = trainer.sft_loss(pairs)
    version = trainer.version
    for _ in range(3):
        trainer.supervised_step(pairs, lr=5e-2, new_version=False)
    assert trainer.sft_loss(pairs) < before  # the weights moved towards the pairs
    assert trainer.version == version
    assert [g["lr"] for g in trainer.optimizer.param_groups] == [1e-4] * len(trainer.optimizer.param_groups)
    trainer.supervised_step(pairs, lr=5e-2)
    assert trainer.version == version + 1  # the warm start's own steps still make versions


def _moments(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [t.clone() for state in optimizer.state.values() for t in (state["exp_avg"], state["exp_avg_sq"])]


def test_a_replay_step_leaves_the_grpo_steps_adam_moments_alone(small_model_dir: Path) -> None:
    """Supervised steps have their own Adam moments: a cross-entropy gradient over a whole file
    must not set the scale (second moment) or the direction (first moment) of the next GRPO step."""
    trainer = Trainer(
        str(small_model_dir),
        ModelConfig(lora_rank=4, lora_alpha=8),
        LearnerConfig(lr=1e-3, loss_agg="dapo", ppo_epochs=1, kl_coef=0.0),
        seed=0,
    )
    agent = [sample("agent", 2, 4, 1.0, 0), sample("agent", 2, 4, -1.0, 7)]
    for s, lp in zip(agent, trainer.logprobs(agent), strict=True):
        trained = [i for i, m in enumerate(s.loss_mask) if m]
        for i, v in zip(trained, lp.tolist(), strict=True):
            s.behaviour_logprobs[i] = v
    trainer.train_step(agent)
    grpo_moments = _moments(trainer.optimizer)
    assert grpo_moments and not trainer.sft_optimizer.state
    trainer.supervised_step([sample("designer", 3, 20, 0.0, 2)], lr=1e-3, new_version=False)
    assert all(torch.equal(a, b) for a, b in zip(grpo_moments, _moments(trainer.optimizer), strict=True))
    assert _moments(trainer.sft_optimizer)  # the replay's own moments
    # Both are part of the state a checkpoint keeps, and come back from it.
    state = trainer.state_dict()
    other = Trainer(str(small_model_dir), ModelConfig(lora_rank=4, lora_alpha=8), LearnerConfig(lr=1e-3), seed=0)
    other.load_state_dict(state)
    for mine, theirs in ((trainer.optimizer, other.optimizer), (trainer.sft_optimizer, other.sft_optimizer)):
        assert all(torch.equal(a, b) for a, b in zip(_moments(mine), _moments(theirs), strict=True))
        assert len(_moments(theirs)) == len(_moments(mine))


def _adapter_distance(a: Trainer, b: Trainer) -> float:
    left, right = a._adapter_state(), b._adapter_state()
    return float(sum((left[k] - right[k]).float().pow(2).sum() for k in left) ** 0.5)


def _with_own_logprobs(trainer: Trainer, samples: list[TrainSample]) -> list[TrainSample]:
    for s, lp in zip(samples, trainer.logprobs(samples), strict=True):
        trained = [i for i, m in enumerate(s.loss_mask) if m]
        for i, v in zip(trained, lp.tolist(), strict=True):
            s.behaviour_logprobs[i] = v
    return samples


def test_designer_samples_take_a_step_of_their_own_at_learner_designer_lr(small_model_dir: Path) -> None:
    """``learner.designer_lr``: the agent's samples move the adapter as they would alone, the
    designer's add a step at their own rate with Adam moments of their own; one version."""

    def trainer(designer_lr: float | None) -> Trainer:
        cfg = LearnerConfig(lr=1e-2, loss_agg="dapo", ppo_epochs=1, kl_coef=0.0, designer_lr=designer_lr)
        return Trainer(str(small_model_dir), ModelConfig(lora_rank=4, lora_alpha=8), cfg, seed=0)

    def batch(t: Trainer, with_design: bool = True) -> list[TrainSample]:
        agent = [sample("agent", 2, 4, 1.0, 0), sample("agent", 2, 4, -1.0, 7)]
        return _with_own_logprobs(t, [*agent, sample("designer", 2, 20, 2.0, 11)] if with_design else agent)

    agent_only, shared, own, own_fast = trainer(None), trainer(None), trainer(1e-5), trainer(1e-2)
    agent_only.train_step(batch(agent_only, with_design=False))
    shared.train_step(batch(shared))
    version = own.version
    metrics = own.train_step(batch(own))
    own_fast.train_step(batch(own_fast))
    assert own.version == version + 1 and metrics["version"] == version + 1
    assert metrics["designer_samples"] == 1.0 and metrics["n_samples"] == 2.0
    assert own.designer_optimizer.state and not own.sft_optimizer.state
    # At 1e-5 the design barely moves the adapter past the agent's step; in the shared step, or at
    # the agent's own rate in its own step, it moves it about as far as the agent's samples do.
    assert _adapter_distance(own, agent_only) < 0.01 * _adapter_distance(shared, agent_only)
    assert _adapter_distance(own_fast, agent_only) > 50 * _adapter_distance(own, agent_only)
    # A step with only designer samples still makes one version; the moments come back from a checkpoint.
    only = own.train_step(_with_own_logprobs(own, [sample("designer", 2, 20, -1.0, 3)]))
    assert own.version == version + 2 and only["n_samples"] == 0.0 and only["designer_samples"] == 1.0
    other = trainer(1e-5)
    other.load_state_dict(own.state_dict())
    assert all(
        torch.equal(a, b)
        for a, b in zip(_moments(own.designer_optimizer), _moments(other.designer_optimizer), strict=True)
    )
    assert len(_moments(other.designer_optimizer)) == len(_moments(own.designer_optimizer)) > 0


def _distance(left: dict[str, torch.Tensor], right: dict[str, torch.Tensor]) -> float:
    return float(sum((left[k] - right[k]).float().pow(2).sum() for k in left) ** 0.5)


def test_per_role_adapters_keep_each_role_s_updates_to_its_own_weights(small_model_dir: Path, tmp_path: Path) -> None:
    """``learner.adapters = "per_role"``: the agent's weights move exactly as an agent-only step
    moves them; the designer's samples and the replay move only the designer's weights; the
    adapter folder and a checkpoint carry both."""
    from safetensors.torch import load_file

    def trainer(adapters: str) -> Trainer:
        cfg = LearnerConfig(lr=1e-2, loss_agg="dapo", ppo_epochs=1, kl_coef=0.0, adapters=adapters)
        return Trainer(str(small_model_dir), ModelConfig(lora_rank=4, lora_alpha=8), cfg, seed=0)

    def batch(t: Trainer, with_design: bool = True) -> list[TrainSample]:
        agent = [sample("agent", 2, 4, 1.0, 0), sample("agent", 2, 4, -1.0, 7)]
        return _with_own_logprobs(t, [*agent, sample("designer", 2, 20, 2.0, 11)] if with_design else agent)

    agent_only, shared, split = trainer("shared"), trainer("shared"), trainer("per_role")
    start = split._adapter_state()
    agent_only.train_step(batch(agent_only, with_design=False))
    shared.train_step(batch(shared))
    assert shared.designer_weights is None
    metrics = split.train_step(batch(split))
    assert metrics["designer_samples"] == 1.0 and metrics["n_samples"] == 2.0 and split.version == 1
    assert split.designer_weights is not None
    assert _distance(split._adapter_state(), agent_only._adapter_state()) == 0.0  # the design did not touch it
    assert _distance(shared._adapter_state(), agent_only._adapter_state()) > 0.0  # as it does when shared
    designer = {k: v.clone() for k, v in split.designer_weights.items()}
    assert _distance(designer, start) > 0.0 and _distance(designer, split._adapter_state()) > 0.0
    # The replay (designer samples) trains the designer's weights; the agent's stay.
    agent_weights = split._adapter_state()
    split.supervised_step([sample("designer", 3, 8, 0.0, 2)], lr=5e-2, new_version=False)
    assert _distance(split._adapter_state(), agent_weights) == 0.0
    assert _distance(split.designer_weights, designer) > 0.0
    with pytest.raises(ValueError, match="one role"):
        split.supervised_step([sample("designer", 3, 8, 0.0, 2), sample("agent", 2, 4, 0.0, 1)])
    # The folder: the agent's adapter, and the designer's in designer/.
    split.save_adapter(tmp_path / "v1")
    saved_agent = load_file(str(tmp_path / "v1" / "adapter_model.safetensors"))
    saved_designer = load_file(str(tmp_path / "v1" / "designer" / "adapter_model.safetensors"))
    assert sorted(saved_agent) == sorted(saved_designer) and len(saved_agent) == len(split.designer_weights)
    assert all(torch.equal(saved_designer[k], split.designer_weights[k]) for k in saved_designer)
    assert all(torch.equal(saved_agent[k], agent_weights[k]) for k in saved_agent)
    shared.save_adapter(tmp_path / "shared")
    assert not (tmp_path / "shared" / "designer").exists()
    # A checkpoint brings both back.
    other = trainer("per_role")
    other.load_state_dict(split.state_dict())
    assert other.designer_weights is not None
    assert _distance(other.designer_weights, split.designer_weights) == 0.0
    assert _distance(other._adapter_state(), agent_weights) == 0.0
