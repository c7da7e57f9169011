"""vLLM backend (GPU): AsyncLLM colocated with the learner, LoRA adapters hot-swapped by version.

Why these settings: ``logprobs_mode="processed_logprobs"`` makes vLLM report each sampled
token's logprob *after* temperature/top-p, i.e. under the distribution it was sampled from,
which is what GRPO's ratio and TIS need (the default is the raw model logprob). Adapter
names carry the version (``v12``) because vLLM's prefix cache is keyed by adapter name: a
reused name would serve KV blocks computed with old weights.

Status: written against vLLM's documented AsyncLLM API (>= 0.10.2); it is exercised only by
``tests/gpu`` and ``scripts/gpu_smoke.sh`` on a machine with a GPU, never in CPU CI.
"""

from __future__ import annotations

import itertools
from typing import Any

from spade_async.config import Config
from spade_async.engine.base import Completion, GenerationRequest


class VLLMEngine:
    """Token-in/token-out generation through ``vllm.v1.engine.async_llm.AsyncLLM``."""

    def __init__(self, model_path: str, cfg: Config) -> None:
        try:
            from transformers import AutoTokenizer
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:  # pragma: no cover - GPU extra
            raise RuntimeError("engine.backend = \"vllm\" needs the GPU extra: pip install 'spade-async[vllm]'") from exc
        args = AsyncEngineArgs(
            model=model_path,
            dtype="auto" if cfg.model.dtype == "auto" else cfg.model.dtype,
            gpu_memory_utilization=cfg.engine.gpu_memory_utilization,
            max_model_len=cfg.engine.max_model_len,
            enable_lora=True,
            max_lora_rank=cfg.model.lora_rank,
            max_loras=cfg.engine.max_loras,
            enable_prefix_caching=True,
            logprobs_mode="processed_logprobs",
            seed=cfg.run.seed,
        )
        self._engine = AsyncLLM.from_engine_args(args)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.adapter_version = 0
        self._lora: Any = None
        self._ids = itertools.count()
        self.generated_tokens = 0

    @property
    def eos_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def eos_text(self) -> str:
        return str(self.tokenizer.eos_token)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, token_ids: list[int]) -> str:
        return str(self.tokenizer.decode(token_ids, skip_special_tokens=True))

    def chat_text(self, messages: list[dict[str, str]], add_generation_prompt: bool = True,
                  tools: list[dict[str, Any]] | None = None) -> str:
        spec: list[Any] | None = list(tools) if tools else None
        return str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False,
                                                      tools=spec))

    def chat_prompt(self, messages: list[dict[str, str]], add_generation_prompt: bool = True,
                    tools: list[dict[str, Any]] | None = None) -> list[int]:
        return self.encode(self.chat_text(messages, add_generation_prompt, tools))

    async def _one(self, request: GenerationRequest) -> Completion:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        s = request.sampling
        params = SamplingParams(
            temperature=s.temperature,
            top_p=s.top_p,
            max_tokens=s.max_new_tokens,
            stop=list(s.stop) or None,
            include_stop_str_in_output=True,
            logprobs=0,  # the sampled token's logprob only
            seed=s.seed,
        )
        version, lora = self.adapter_version, self._lora
        final = None
        async for out in self._engine.generate(
            TokensPrompt(prompt_token_ids=list(request.prompt_ids)), params, f"r{next(self._ids)}", lora_request=lora
        ):
            final = out
        assert final is not None
        seq = final.outputs[0]
        token_ids = list(seq.token_ids)
        logprobs = [float(step[tok].logprob) for step, tok in zip(seq.logprobs or [], token_ids, strict=True)]
        self.generated_tokens += len(token_ids)
        return Completion(
            prompt_ids=list(request.prompt_ids),
            token_ids=token_ids,
            logprobs=logprobs,
            text=seq.text,
            finish_reason="stop" if seq.finish_reason == "stop" else "length",
            adapter_version=version,
        )

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        import anyio

        results: list[Completion | None] = [None] * len(requests)

        async def run(i: int, r: GenerationRequest) -> None:
            results[i] = await self._one(r)

        async with anyio.create_task_group() as tg:
            for i, r in enumerate(requests):
                tg.start_soon(run, i, r)
        return [r for r in results if r is not None]

    async def load_adapter(self, version: int, path: str) -> None:
        from vllm.lora.request import LoRARequest

        lora = LoRARequest(lora_name=f"v{version}", lora_int_id=version, lora_path=path)
        await self._engine.add_lora(lora)
        previous = self._lora
        self._lora, self.adapter_version = lora, version
        if previous is not None:
            await self._engine.remove_lora(previous.lora_int_id)

    async def aclose(self) -> None:
        self._engine.shutdown()
