"""Qwen3 thinking, with the real Qwen3 chat template (tests/fixtures/chat_templates/qwen3.jinja)
applied by a real tokenizer: every role renders with thinking off by default, and a
``<think>`` block in a reply is never read as the design, the hint or the action."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from spade_async.config import Config, SandboxConfig
from spade_async.engine.base import Completion, GenerationRequest, Sampling
from spade_async.engine.tokens import TokenizerHelpers
from spade_async.envs.seeds import SeedEnv
from spade_async.eval.suites import EvalContext
from spade_async.eval.suites.games import GamesSuite
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import DesignJob, design_environment, write_hint
from spade_async.selfplay.design.parsing import parse_action, parse_designer, strip_thinking
from tests.integration.test_eval import ECHO_ENV

pytestmark = pytest.mark.anyio
TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates" / "qwen3.jinja"
EMPTY_THINK = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


@pytest.fixture(scope="module")
def qwen3_tokenizer() -> Any:
    """The SmolLM2 tokenizer (cached, offline) with Qwen3's chat template and its <think> tokens."""
    from transformers import AutoTokenizer

    from spade_async.engine.embedded import tokenizer_dir

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    tok.add_tokens(["<think>", "</think>"])  # Qwen3: added tokens, not special (they survive decode)
    tok.chat_template = TEMPLATE.read_text()
    return tok


class Qwen3Engine(TokenizerHelpers):
    """The engines' real prompt side (``TokenizerHelpers``) over the Qwen3 template, with
    scripted replies: ``replies[role](prompt_text)``."""

    def __init__(self, tokenizer: Any, replies: dict[str, Callable[[str], str]]) -> None:
        self.tokenizer = tokenizer
        self.replies = replies
        self.adapter_version = 0
        self.max_model_len = 8192
        self.prompts: list[tuple[str, str]] = []

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        out = []
        for r in requests:
            prompt = self.tokenizer.decode(r.prompt_ids, skip_special_tokens=False)
            self.prompts.append((r.role, prompt))
            ids = [*self.encode(self.replies[r.role](prompt)), self.eos_token_id]
            out.append(Completion(list(r.prompt_ids), ids, [-0.1] * len(ids), self.decode(ids), "stop", 0))
        return out

    async def load_adapter(self, version: int, path: str) -> None:
        self.adapter_version = version

    def rng_state(self) -> dict[str, Any] | None:
        return None  # scripted: no sampling RNG

    def set_rng_state(self, state: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        return None


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0, max_children=4)) as p:
        yield p


def test_the_qwen3_template_honours_the_switch(qwen3_tokenizer: Any) -> None:
    engine = Qwen3Engine(qwen3_tokenizer, {})
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    assert engine.chat_text(chat, enable_thinking=False).endswith(EMPTY_THINK)
    assert engine.chat_text(chat, enable_thinking=True).endswith(
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert engine.chat_text(chat) == engine.chat_text(chat, enable_thinking=True)  # the template's default: thinking on


def test_every_role_defaults_to_thinking_off() -> None:
    cfg = Config()
    assert [
        Sampling.from_config(s).enable_thinking for s in (cfg.engine.designer, cfg.engine.agent, cfg.engine.hint)
    ] == [False] * 3


CODE_IN_THINKING = (
    "<think>\nA first draft:\n```python\n" + ECHO_ENV + "```\nBut I am not done.\n</think>\n\nI could not finish."
)


async def test_designer_prompt_has_thinking_off_and_code_inside_thinking_is_not_the_design(
    qwen3_tokenizer: Any, pool: SandboxPool
) -> None:
    replies = {"designer": lambda p: CODE_IN_THINKING, "hint": lambda p: "<think>HINT: scan all</think>Type the word."}
    engine = Qwen3Engine(qwen3_tokenizer, replies)
    cfg = Config()
    job = DesignJob("Pattern Recognition", Document("d", "t", "Words."), "fresh")
    design = await design_environment(
        engine,
        pool,
        job,
        designer_sampling=Sampling.from_config(cfg.engine.designer),
        hint_sampling=Sampling.from_config(cfg.engine.hint),
        max_turns=5,
        repair_turns=0,
        separate_hint_call=True,
    )
    assert engine.prompts[0][0] == "designer" and engine.prompts[0][1].endswith(EMPTY_THINK)
    assert not design.admitted and design.code is None
    assert design.reasons == ["no ```python code block found"]
    # The same code after the thinking is the design, and the hint call's thinking is dropped too.
    replies["designer"] = lambda p: (
        "<think>\n```python\nclass Draft(GameEnv):\n    pass\n```\n</think>\n\n```python\n" + ECHO_ENV + "```\n"
    )
    design = await design_environment(
        engine,
        pool,
        job,
        designer_sampling=Sampling.from_config(cfg.engine.designer),
        hint_sampling=Sampling.from_config(cfg.engine.hint),
        max_turns=5,
        repair_turns=0,
        separate_hint_call=True,
    )
    assert design.admitted and design.code is not None and "class Echo" in design.code and "Draft" not in design.code
    assert await write_hint(engine, ECHO_ENV, Sampling.from_config(cfg.engine.hint)) == "Type the word."
    assert engine.prompts[-1][0] == "hint" and engine.prompts[-1][1].endswith(EMPTY_THINK)


def word(prompt: str) -> str:
    return re.findall(r"Type the word: (\w+)", prompt)[-1]


@pytest.mark.parametrize(
    ("reply", "won", "acted"),
    [
        (lambda p: "<think>maybe \\boxed{zzz}</think>\n\\boxed{" + word(p) + "}", True, True),
        (lambda p: "<think>It is \\boxed{" + word(p) + "}</think>\nI am not sure.", False, False),
        (lambda p: "<think>It is \\boxed{" + word(p) + "} but", False, False),  # cut off while thinking
    ],
)
async def test_an_action_pondered_in_thinking_is_not_played(
    qwen3_tokenizer: Any, pool: SandboxPool, reply: Callable[[str], str], won: bool, acted: bool
) -> None:
    engine = Qwen3Engine(qwen3_tokenizer, {"agent": reply})
    cfg = Config.model_validate({"selfplay": {"max_turns": 1}})
    suite = GamesSuite(
        "echo", [SeedEnv("echo", "Pattern Recognition", "Type the word.", "Repeat a word.", ECHO_ENV)], episodes=1
    )
    score = await suite.score(EvalContext(engine, pool, cfg), suite.items()[0])
    assert engine.prompts[0][1].endswith(EMPTY_THINK)  # the agent's prompt: thinking off
    assert score.error is None and score.solved is won
    assert score.detail["actions"] == (1 if acted else 0)


def test_strip_thinking_forms() -> None:
    assert strip_thinking("<think>a</think>\n\nb") == "b"
    assert strip_thinking("pondering</think>answer") == "answer"  # the template opened the block
    assert strip_thinking("<think>never closed") == ""
    assert strip_thinking("x <think>1</think> y <think>2</think> z") == "x  y  z"
    assert strip_thinking("no tags at all") == "no tags at all"
    assert parse_designer("<think>```python\nclass A: pass\n```</think>").code is None
    assert parse_action("<think>\\boxed{1}</think>\\boxed{2}") == "2"
