"""Test doubles for orchestration tests and the pipeline benchmark: a scripted engine and learner.

Why in the library: the benchmark (``benchmarks/pipeline.py``) and the tests both need an
engine whose generation cost is known and a learner whose step cost is known, to measure
overlap against an exact ideal. Everything *else* in such a run is real: the sandbox runs
the environment code, the store writes SQLite, the orchestrator is the production one.

The scripted "tokenizer" maps each character to its code point, so token/text alignment is
trivially exact, and the chat template is a few control characters.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from spade_async.engine.base import Completion, GenerationRequest
from spade_async.learner.samples import TrainSample
from spade_async.util.rng_data import python_random_from_data, python_random_to_data

LOTTERY_ENV = """SKILL = "Causal Inference"
HINT = "Any move ends the game; the outcome was drawn at reset."
DESCRIPTION = "A lottery: the outcome is fixed by the seed."


class Lottery(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.win = self.rng.random() < 0.5
        return "Say anything in \\\\boxed{...}.", {}

    def step(self, action):
        self.turn += 1
        return ("You won." if self.win else "You lost."), (1.0 if self.win else 0.0), True, False, {}
"""
"""A game of chance whose outcome the seed alone decides: every group of plays has GRPO signal
whatever the policy (kill/resume, in-loop eval and vLLM checks). A user-supplied pool game: the
play audit, which would expel it, audits only model-written code."""

COIN_ENV = """SKILL = "Pattern Recognition"
HINT = "The coin is weighted: it lands heads seven times in ten. Always call heads."
DESCRIPTION = "Call a weighted coin flip."


class WeightedCoin(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.side = "heads" if self.rng.random() < 0.7 else "tails"
        return "Call the flip: \\\\boxed{heads} or \\\\boxed{tails}.", {}

    def step(self, action):
        self.turn += 1
        call = (self.parse_action(action) or "").lower()
        if call not in ("heads", "tails"):
            return "Say heads or tails.", 0.0, False, self.turn >= self.max_turns, {}
        won = call == self.side
        return ("Right!" if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return [self.side]
"""

BROKEN_ENV = "class Broken(GameEnv):\n    def reset(self, seed=None):\n        return 42\n"


def coin_agent(prompt: str, rng: random.Random) -> str:
    """Calls heads when the weighted-coin hint is in the prompt, else a fair guess."""
    if "Always call heads" in prompt:
        return "I follow the hint. \\boxed{heads}"
    return f"\\boxed{{{rng.choice(['heads', 'tails'])}}}"


def coin_designer(prompt: str, rng: random.Random) -> str:
    return f"Here is the game.\n```python\n{COIN_ENV}```\n"


class ScriptedEngine:
    """An :class:`~spade_async.engine.base.Engine` with scripted replies and a fixed latency.

    Each ``generate`` call sleeps ``latency_s`` once (concurrent calls overlap, like a
    batching server) and answers every request with ``policies[role](prompt_text, rng)``:
    ``rng`` is the engine's own RNG, or a fresh one from the request's seed when it names one.
    """

    EOS = "\x03"

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        policies: dict[str, Callable[[str, random.Random], str]] | None = None,
        seed: int = 0,
    ) -> None:
        self.latency_s = latency_s
        self.policies = {"agent": coin_agent, "designer": coin_designer, "hint": lambda p, r: "Always call heads."}
        self.policies.update(policies or {})
        self.rng = random.Random(seed)
        self.adapter_version = 0
        self.max_model_len: int | None = None
        self.generated_tokens = 0
        self.calls = 0
        self.busy_intervals: list[tuple[float, float]] = []
        self.loaded: list[tuple[int, str]] = []
        self.chats: list[tuple[list[dict[str, str]], bool | None]] = []
        """Every chat rendered, with the ``enable_thinking`` it was rendered with."""

    @property
    def eos_token_id(self) -> int:
        return ord(self.EOS)

    @property
    def eos_text(self) -> str:
        return self.EOS

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, token_ids: list[int]) -> str:
        return "".join(chr(t) for t in token_ids if t != self.eos_token_id)

    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """A ChatML-like template without tool support (``tools`` is ignored, like SmolLM2's)."""
        self.chats.append((list(messages), enable_thinking))
        text = "".join(f"\x02{m['role']}\n{m['content']}{self.EOS}\n" for m in messages)
        return text + ("\x02assistant\n" if add_generation_prompt else "")

    def chat_prompt(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        return self.encode(self.chat_text(messages, add_generation_prompt, enable_thinking, tools))

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        start = time.perf_counter()
        self.calls += 1
        version = self.adapter_version
        if self.latency_s:
            await anyio.sleep(self.latency_s)
        out = []
        for r in requests:
            # like the real engines: a request that names a seed draws from its own generator
            rng = self.rng if r.sampling.seed is None else random.Random(r.sampling.seed)
            text = self.policies[r.role](self.decode(r.prompt_ids), rng)
            ids = [*self.encode(text)[: r.sampling.max_new_tokens - 1], self.eos_token_id]
            self.generated_tokens += len(ids)
            out.append(Completion(list(r.prompt_ids), ids, [-0.5] * len(ids), self.decode(ids), "stop", version))
        self.busy_intervals.append((start, time.perf_counter()))
        return out

    async def load_adapter(self, version: int, path: str) -> None:
        self.loaded.append((version, path))
        self.adapter_version = version

    def rng_state(self) -> dict[str, Any] | None:
        return {"python": python_random_to_data(self.rng.getstate())}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self.rng.setstate(python_random_from_data(state["python"]))

    async def aclose(self) -> None:
        return None


class ScriptedLearner:
    """A learner whose step costs ``cost_s`` of wall time (in the worker thread) and records its inputs."""

    def __init__(self, cost_s: float = 0.0) -> None:
        self.cost_s = cost_s
        self.version = 0
        self.batches: list[list[TrainSample]] = []
        self.intervals: list[tuple[float, float]] = []
        self.started_from: Path | None = None
        self.sft_lrs: list[float | None] = []
        """The adapter a warm start made the starting point (``start_from``)."""

    def train_step(self, samples: list[TrainSample]) -> dict[str, float]:
        start = time.perf_counter()
        if self.cost_s:
            time.sleep(self.cost_s)
        self.batches.append(samples)
        self.version += 1
        self.intervals.append((start, time.perf_counter()))
        elapsed = max(time.perf_counter() - start, 1e-9)
        # as the real trainer: its forward rate under the same name as the producer's generation rate
        return {
            "loss": 0.0,
            "n_samples": float(len(samples)),
            "tokens_per_s": sum(len(s.input_ids) for s in samples) / elapsed,
        }

    def save_adapter(self, path: str | Path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "adapter.json").write_text(json.dumps({"version": self.version}))

    def supervised_step(
        self,
        samples: list[TrainSample],
        max_seq_len: int | None = None,
        lr: float | None = None,
        *,
        new_version: bool = True,
    ) -> dict[str, float]:
        self.batches.append(samples)
        self.sft_lrs.append(lr)
        self.version += int(new_version)
        return {"sft_loss": 1.0 / self.version, "sft_tokens": float(sum(sum(s.loss_mask) for s in samples))}

    def sft_loss(self, samples: list[TrainSample], max_seq_len: int | None = None) -> float:
        return 1.0 / (1 + self.version)

    def start_from(self, adapter: str | Path) -> None:
        self.started_from = Path(adapter)
        self.version = 1

    def state_dict(self) -> dict[str, Any]:
        return {"version": self.version}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.version = int(state["version"])
