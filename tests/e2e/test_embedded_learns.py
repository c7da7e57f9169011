"""The embedded SmolLM2 learns: mean return on a small two-turn game rises with GRPO.

Everything is real: the HF engine samples, the sandbox runs the game, the agent builds
token-level samples with behaviour logprobs, the trainer takes GRPO steps on a LoRA adapter,
and the engine hot-swaps each new adapter version before the next plays.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from spade_async.config import LearnerConfig, ModelConfig, SandboxConfig
from spade_async.engine.base import Sampling
from spade_async.learner.grpo import group_advantages
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.play.agent import play_episode

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.machine_dtype]

DOORS = """SKILL = "Causal Inference"
HINT = "The prize is behind the door called right."
DESCRIPTION = "Pick a door; you may look first."


class Doors(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        return "Two doors, left and right. Open one: \\\\boxed{left} or \\\\boxed{right}.", {}

    def step(self, action):
        self.turn += 1
        pick = (self.parse_action(action) or "").strip().lower()
        if pick.startswith("right"):
            return "The prize!", 1.0, True, False, {}
        if pick.startswith("left"):
            return "Empty. One more try.", 0.0, self.turn >= 2, False, {}
        return "Say left or right.", 0.0, False, self.turn >= 2, {}
"""


async def test_grpo_raises_mean_return(embedded_model_dir: Path, tmp_path: Path) -> None:
    from spade_async.engine.hf import HFEngine
    from spade_async.learner.trainer import Trainer

    engine = HFEngine(embedded_model_dir, seed=0)
    trainer = Trainer(
        str(embedded_model_dir),
        ModelConfig(lora_rank=8, lora_alpha=32, lora_targets=["q_proj", "v_proj"]),
        LearnerConfig(lr=2e-3, micro_batch=8, max_seq_len=512),
        device="cpu",
        seed=0,
    )
    sampling = Sampling(temperature=1.0, max_new_tokens=4, stop=("}",))
    means: list[float] = []
    async with await SandboxPool.start(SandboxConfig()) as pool:
        for step in range(7):
            episodes = []
            for i in range(12):
                episodes.append(
                    await play_episode(
                        engine,
                        pool,
                        env_id="doors",
                        source=DOORS,
                        seed=step * 100 + i,
                        hint=None,
                        sampling=sampling,
                        max_turns=2,
                        max_context_tokens=1024,
                        no_action_penalty=-0.1,
                        action_prefill=True,
                    )
                )
            assert all(ep.error is None for ep in episodes)
            outcomes = [ep.outcome for ep in episodes]
            means.append(statistics.fmean(outcomes))
            advantages, _ = group_advantages(outcomes, ["doors"] * len(outcomes))
            samples = [ep.to_sample(a, sampling.temperature) for ep, a in zip(episodes, advantages, strict=True)]
            before = trainer.version
            trainer.train_step(samples)
            if trainer.version != before:
                trainer.save_adapter(tmp_path / f"v{trainer.version}")
                await engine.load_adapter(trainer.version, str(tmp_path / f"v{trainer.version}"))
    assert engine.adapter_version == trainer.version > 0
    start, end = means[0], statistics.fmean(means[-2:])
    assert start < 0.9, f"the untrained model already wins ({means}); the test needs room to improve"
    assert end > start + 0.15, means
