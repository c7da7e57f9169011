"""reasoning-gym suite: single-turn problems from four families, scored by reasoning-gym.

Why reasoning-gym: its generators are procedural (installed, offline, any size, a fixed
seed gives the same problems everywhere) and every dataset scores answers with its own
``score_answer`` (partial credit where the task defines it), so nothing here judges answers.

Families and datasets (fixed; ``size`` problems each, seed :data:`RG_SEED`):

- arithmetic: ``basic_arithmetic``, ``chain_sum``
- logic: ``syllogism``
- algorithmic: ``letter_counting``, ``spell_backward``
- cognition: ``number_sequence``

The prompt is reasoning-gym's own ``default`` system prompt (answer inside
``<answer>...</answer>``); the answer is read with reasoning-gym's ``extract_answer``, falling
back to the last ``\\boxed{}`` and then the last non-empty line (small models often skip tags).
Sampling: the run's agent temperature, top_p and ``enable_thinking``, ``max_new_tokens`` from
the suite options (default 192), cut so that prompt and answer fit ``engine.max_model_len``
(a question leaving fewer than 8 answer tokens is an error item, left out of the pairing);
a ``<think>`` block is dropped before the answer is read. ``solved`` means
``score_answer == 1.0``.
"""

from __future__ import annotations

import math
from typing import Any

from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.envs.contract import parse_boxed
from spade_async.eval.suites.registry import (
    EvalContext,
    EvalItem,
    ItemScore,
    SuiteError,
    register_suite,
)
from spade_async.selfplay.design.parsing import strip_thinking

FAMILIES: dict[str, tuple[str, ...]] = {
    "arithmetic": ("basic_arithmetic", "chain_sum"),
    "logic": ("syllogism",),
    "algorithmic": ("letter_counting", "spell_backward"),
    "cognition": ("number_sequence",),
}
RG_SEED = 20260
"""Seed of every reasoning-gym dataset (no training path uses reasoning-gym)."""
DEFAULT_SIZE = 16
DEFAULT_MAX_NEW_TOKENS = 192
MIN_ANSWER_TOKENS = 8
"""Fewest answer tokens worth asking for; a question leaving less is an error item (not paired)."""


def answer_budget(prompt_tokens: int, max_new_tokens: int, max_model_len: int | None) -> int:
    """Answer tokens for a prompt: ``max_new_tokens``, cut so prompt + answer fit ``max_model_len``
    (the engine refuses a longer request)."""
    return max_new_tokens if max_model_len is None else min(max_new_tokens, max_model_len - prompt_tokens)


def extract(completion: str) -> str:
    """The model's answer: ``<answer>`` tags, else the last ``\\boxed{}``, else the last line."""
    from reasoning_gym.utils import extract_answer

    tagged = extract_answer(completion)
    if tagged is not None:
        return str(tagged)
    boxed = parse_boxed(completion)
    if boxed is not None:
        return boxed
    lines = [line.strip() for line in completion.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class ReasoningGymSuite:
    metrics = ("score", "solved")
    needs_sandbox = False

    def __init__(
        self,
        families: list[str] | None = None,
        *,
        size: int = DEFAULT_SIZE,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        seed: int = RG_SEED,
    ) -> None:
        import reasoning_gym

        chosen = families or list(FAMILIES)
        unknown = [f for f in chosen if f not in FAMILIES]
        if unknown:
            raise SuiteError(f"suite reasoning_gym: unknown family {unknown}; choose from {list(FAMILIES)}")
        if size < 1:
            raise SuiteError(f"suite reasoning_gym: size must be at least 1 (got {size})")
        self.name = "reasoning_gym" if families is None else "reasoning_gym:" + ",".join(chosen)
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.datasets: dict[str, Any] = {
            f"{family}/{ds}": reasoning_gym.create_dataset(ds, size=size, seed=seed)
            for family in chosen
            for ds in FAMILIES[family]
        }

    def items(self) -> list[EvalItem]:
        return [
            EvalItem(task, f"{task}#{i}", (task, i))
            for task, dataset in self.datasets.items()
            for i in range(len(dataset))
        ]

    def question(self, item: EvalItem) -> dict[str, Any]:
        task, i = item.payload
        entry: dict[str, Any] = self.datasets[task][i]
        return entry

    def cache_fingerprint(self) -> dict[str, Any]:
        """What a base score depends on beyond the item keys (see ``eval.base_cache``)."""
        from importlib.metadata import version

        return {"max_new_tokens": self.max_new_tokens, "seed": self.seed, "reasoning_gym": version("reasoning-gym")}

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        from reasoning_gym.utils import SYSTEM_PROMPTS

        task, _ = item.payload
        entry = self.question(item)
        agent = ctx.cfg.engine.agent
        prompt = ctx.engine.chat_prompt(
            [
                {"role": "system", "content": SYSTEM_PROMPTS["default"]},
                {"role": "user", "content": entry["question"]},
            ],
            enable_thinking=agent.enable_thinking,
        )
        max_new = answer_budget(len(prompt), self.max_new_tokens, ctx.engine.max_model_len)
        if max_new < MIN_ANSWER_TOKENS:
            return ItemScore(
                math.nan, False, f"prompt of {len(prompt)} tokens leaves no room for an answer in engine.max_model_len"
            )
        sampling = Sampling(
            temperature=agent.temperature,
            top_p=agent.top_p,
            max_new_tokens=max_new,
            enable_thinking=agent.enable_thinking,
        )
        completion = (await ctx.engine.generate([GenerationRequest(prompt, sampling, role="eval")]))[0]
        answer = extract(strip_thinking(completion.text))
        try:
            value = float(self.datasets[task].score_answer(answer, entry))
        except Exception as exc:  # a dataset's scorer choking on odd text is a wrong answer, not a crash
            return ItemScore(0.0, False, None, {"answer": answer[:200], "scorer_error": repr(exc)[:200]})
        return ItemScore(value, value >= 1.0, None, {"answer": answer[:200]})


@register_suite("reasoning_gym")
def reasoning_gym_suite(arg: str | None, options: dict[str, Any]) -> ReasoningGymSuite:
    """``reasoning_gym`` (all four families) or ``reasoning_gym:arithmetic,logic``."""
    families = [f.strip() for f in arg.split(",") if f.strip()] if arg else None
    return ReasoningGymSuite(
        families,
        size=int(options.get("rg_size", DEFAULT_SIZE)),
        max_new_tokens=int(options.get("rg_max_new_tokens", DEFAULT_MAX_NEW_TOKENS)),
    )
