"""`eval` fits its requests to the engine's limit the way the run does: a games episode stops
when its transcript would pass ``min(selfplay.max_context_tokens, engine.max_model_len)``, a
reasoning-gym answer gets the tokens left (none left: an error item, never a refused request)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from spade_async.config import Config
from spade_async.engine.base import Completion, GenerationRequest
from spade_async.envs.seeds import load_seeds
from spade_async.eval.suites import EvalContext
from spade_async.eval.suites.games import GamesSuite
from spade_async.eval.suites.reasoning import ReasoningGymSuite
from spade_async.sandbox.pool import SandboxPool
from spade_async.testing import ScriptedEngine

pytestmark = pytest.mark.anyio


class LimitedEngine(ScriptedEngine):
    """A scripted engine with an engine limit; records what each request would need."""

    def __init__(self, max_model_len: int) -> None:
        super().__init__(
            policies={"agent": lambda p, r: "guess \\boxed{50}", "eval": lambda p, r: "<answer>1</answer>"}
        )
        self.max_model_len = max_model_len
        self.needed: list[int] = []

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        self.needed += [len(r.prompt_ids) + r.sampling.max_new_tokens for r in requests]
        return await super().generate(requests)


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(Config().sandbox) as p:
        yield p


async def test_games_episodes_stay_inside_the_engine_limit(pool: SandboxPool) -> None:
    cfg = Config.model_validate(
        {"selfplay": {"max_turns": 50, "max_context_tokens": 100_000}, "engine": {"agent": {"max_new_tokens": 24}}}
    )
    guess = next(s for s in load_seeds() if s.name == "number_guess")
    suite = GamesSuite("g", [guess], episodes=1)
    first = ScriptedEngine().chat_prompt([{"role": "system", "content": "x"}])  # a rough prompt size, in characters
    engine = LimitedEngine(max_model_len=900 + len(first))
    score = await suite.score(EvalContext(engine, pool, cfg), suite.items()[0])
    assert score.error is None and 1 <= score.detail["turns"] < 50  # the limit, not max_turns, ended it
    assert engine.needed and max(engine.needed) <= engine.max_model_len


async def test_reasoning_answers_get_the_tokens_left() -> None:
    suite = ReasoningGymSuite(["arithmetic"], size=1, max_new_tokens=192)
    item = suite.items()[0]
    probe = LimitedEngine(max_model_len=100_000)
    await suite.score(EvalContext(probe, None, Config()), item)
    prompt_len = probe.needed[0] - 192
    fitted = LimitedEngine(max_model_len=prompt_len + 20)
    score = await suite.score(EvalContext(fitted, None, Config()), item)
    assert fitted.needed == [prompt_len + 20] and score.error is None  # 20 answer tokens, not 192
    none_left = LimitedEngine(max_model_len=prompt_len + 3)
    score = await suite.score(EvalContext(none_left, None, Config()), item)
    assert none_left.needed == [] and score.error is not None and "max_model_len" in score.error
