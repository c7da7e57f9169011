"""The generation interface every backend implements (transformers on CPU, vLLM on GPU).

Why token ids and logprobs come back, not text alone: GRPO needs the *behaviour* logprob of
every sampled token (for the ratio and for truncated importance sampling), and multi-turn
agents must append tokens rather than re-render and re-tokenise a chat (re-tokenisation
changes token boundaries and silently breaks the loss mask). So a request is a list of
prompt token ids, and a completion is the sampled token ids with their logprobs under the
sampling distribution (after temperature), plus the decoded text for parsing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Sampling:
    """How to sample one request; mirrors ``config.SamplingConfig``."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    enable_thinking: bool | None = None
    """Chat-template switch for the prompts of this role (None: the template's default)."""
    loop_ngram: int = 0
    """End the completion once an n-gram of this many tokens has occurred ``loop_repeats``
    times in it (``finish_reason = "loop"``; see ``engine.loops``); 0: never."""
    loop_repeats: int = 4

    @classmethod
    def from_config(cls, section: Any, seed: int | None = None) -> Sampling:
        """From a ``config.SamplingConfig`` (duck-typed: the engine layer does not import config)."""
        return cls(
            section.temperature,
            section.top_p,
            section.max_new_tokens,
            tuple(section.stop),
            seed,
            section.enable_thinking,
            section.loop_ngram or 0,
            section.loop_repeats,
        )


def stop_token_ids(tokenizer: Any, generation_config: Any = None) -> list[int]:
    """Token ids that end a completion, the same in every engine: the tokenizer's EOS plus
    every EOS id of the model's ``generation_config`` (vLLM stops at both; for Qwen that is
    ``<|im_end|>`` and ``<|endoftext|>``)."""
    ids: list[int] = []
    candidates: list[Any] = [getattr(tokenizer, "eos_token_id", None)]
    extra = getattr(generation_config, "eos_token_id", None) if generation_config is not None else None
    candidates.extend(extra if isinstance(extra, (list, tuple)) else [extra])
    for tok in candidates:
        if tok is not None and int(tok) not in ids:
            ids.append(int(tok))
    return ids


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete. ``role`` tags the request for metrics (designer/agent/hint)."""

    prompt_ids: list[int]
    sampling: Sampling = field(default_factory=Sampling)
    role: str = "agent"
    affinity: str | None = None
    """Requests with the same key share a data-parallel replica (and so its prefix cache):
    the environment id, for an episode's turns and a group's plays. None: any replica."""


@dataclass
class Completion:
    """One sampled continuation of a request."""

    prompt_ids: list[int]
    token_ids: list[int]
    """Sampled tokens (after the prompt); ends with a stop token id (EOS) when the model stopped by itself."""
    logprobs: list[float]
    """Behaviour logprob of each sampled token under the tempered sampling distribution."""
    text: str
    """Decoded completion (special tokens removed), cut after the first stop string if any."""
    finish_reason: str
    """`stop` (EOS or a stop string), or `length` (max_new_tokens reached)."""
    adapter_version: int
    """Version of the LoRA adapter that produced it (0 = base model)."""


@runtime_checkable
class Engine(Protocol):
    """An async text generator with hot-swappable LoRA adapters."""

    @property
    def adapter_version(self) -> int:
        """The adapter version live for the next generate call (0 = base model)."""
        ...

    @property
    def max_model_len(self) -> int | None:
        """Longest prompt + completion the engine accepts (callers fit prompts to it); None: no limit."""
        ...

    @property
    def generated_tokens(self) -> int:
        """Completion tokens generated so far (all roles), for throughput figures."""
        ...

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        """Complete every request (order kept). Concurrent calls are allowed."""
        ...

    async def load_adapter(self, version: int, path: str) -> None:
        """Make the PEFT adapter at ``path`` live as ``version`` for later generate calls."""
        ...

    def encode(self, text: str) -> list[int]:
        """Tokenise plain text (no special tokens added)."""
        ...

    def decode(self, token_ids: list[int]) -> str:
        """Detokenise, dropping special tokens."""
        ...

    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """Render chat messages with the model's template (special tokens as text);
        ``enable_thinking`` goes to the template when not None. ``tools`` (OpenAI function
        schemas) go to the template's own tool rendering; a template without one ignores them
        (the tool-use agent detects that and lists them itself)."""
        ...

    def chat_prompt(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """``encode(chat_text(...))``: the rendered chat as token ids."""
        ...

    @property
    def eos_token_id(self) -> int:
        """Token that ends a completion."""
        ...

    @property
    def eos_text(self) -> str:
        """The EOS token as it appears in rendered chat text (e.g. ``<|im_end|>``)."""
        ...

    async def aclose(self) -> None:
        """Release the model and threads."""
        ...

    def rng_state(self) -> dict[str, Any] | None:
        """The engine's own sampling RNG state as plain JSON data, for a checkpoint (None when
        it has none: every request then samples from its own seed or the backend's)."""
        ...

    def set_rng_state(self, state: dict[str, Any]) -> None:
        """Restore a state returned by ``rng_state`` (on resume, for identical sampling)."""
        ...
