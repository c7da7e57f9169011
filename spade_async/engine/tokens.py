"""Tokenizer and chat-template helpers shared by the engines (HF and vLLM).

Why one home: the designer and agent build their prompts through ``engine.chat_prompt`` and
train on the token ids it returns, so both backends must render and tokenize exactly alike;
one mixin keeps them from drifting.
"""

from __future__ import annotations

from typing import Any


class TokenizerHelpers:
    """The Engine protocol's tokenizer methods over a Hugging Face tokenizer in ``self.tokenizer``."""

    tokenizer: Any

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

    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        extra: dict[str, Any] = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
        if tools:  # OpenAI function schemas, for templates that render tools (Qwen3); others ignore them
            extra["tools"] = list(tools)
        template: Any = self.tokenizer.apply_chat_template
        return str(template(messages, add_generation_prompt=add_generation_prompt, tokenize=False, **extra))

    def chat_prompt(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        return self.encode(self.chat_text(messages, add_generation_prompt, enable_thinking, tools))
