"""Agent episodes against sandboxed seed environments: scripted policies and the tiny model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_async.config import SandboxConfig
from spade_async.engine.base import Sampling
from spade_async.envs.seeds import load_seeds
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.play.agent import play_episode
from spade_async.testing import ScriptedEngine

pytestmark = pytest.mark.anyio
SEEDS = {s.name: s for s in load_seeds()}


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0)) as p:
        yield p


def scripted_actions(actions: list[str]) -> ScriptedEngine:
    queue = list(actions)
    return ScriptedEngine(policies={"agent": lambda prompt, rng: f"My move: \\boxed{{{queue.pop(0)}}}"})


async def solution_of(pool: SandboxPool, source: str, seed: int) -> list[str]:
    async with await pool.open(source) as env:
        await env.reset(seed)
        solution = await env.solution()
    assert solution
    return solution


@pytest.mark.parametrize("name", sorted(SEEDS))
async def test_playing_the_solution_wins(pool: SandboxPool, name: str) -> None:
    seed_env = SEEDS[name]
    actions = await solution_of(pool, seed_env.source, seed=3)
    engine = scripted_actions(actions)
    ep = await play_episode(
        engine,
        pool,
        env_id=name,
        source=seed_env.source,
        seed=3,
        hint=None,
        sampling=Sampling(max_new_tokens=200),
        max_turns=len(actions) + 2,
        max_context_tokens=100_000,
        no_action_penalty=-0.1,
    )
    assert ep.error is None
    assert ep.outcome == 1.0 and not ep.truncated
    assert ep.turns == len(actions) == ep.n_actions


async def test_no_action_gets_the_penalty_and_truncates(pool: SandboxPool) -> None:
    engine = ScriptedEngine(policies={"agent": lambda prompt, rng: "I am not sure what to do."})
    ep = await play_episode(
        engine,
        pool,
        env_id="g",
        source=SEEDS["number_guess"].source,
        seed=0,
        hint=None,
        sampling=Sampling(max_new_tokens=64),
        max_turns=3,
        max_context_tokens=100_000,
        no_action_penalty=-0.1,
    )
    assert ep.outcome == -0.1 and ep.truncated and ep.turns == 3 and ep.n_actions == 0
    assert "No action found" in ep.transcript[2]["text"]


async def test_loss_mask_covers_exactly_the_sampled_tokens(pool: SandboxPool) -> None:
    engine = scripted_actions(["guess 1", "guess 2", "guess 3"])  # seed 5's secret is none of these
    ep = await play_episode(
        engine,
        pool,
        env_id="g",
        source=SEEDS["number_guess"].source,
        seed=5,
        hint="Use binary search.",
        sampling=Sampling(max_new_tokens=64),
        max_turns=3,
        max_context_tokens=100_000,
        no_action_penalty=-0.1,
    )
    assert len(ep.input_ids) == len(ep.loss_mask) == len(ep.behaviour_logprobs)
    trained = engine.decode([t for t, m in zip(ep.input_ids, ep.loss_mask, strict=True) if m])
    said = "".join(t["text"] for t in ep.transcript if t["role"] == "agent")
    assert trained == said  # every sampled token, and nothing else (EOS is decoded away)
    assert all(lp == -0.5 for lp, m in zip(ep.behaviour_logprobs, ep.loss_mask, strict=True) if m)
    assert all(lp == 0.0 for lp, m in zip(ep.behaviour_logprobs, ep.loss_mask, strict=True) if not m)
    # The hint is in the first observation of a hinted play, and recorded.
    assert ep.hinted and ep.transcript[0] == {"role": "hint", "text": "Use binary search.", "reward": None}
    assert "Use binary search." in engine.decode(ep.input_ids[: ep.loss_mask.index(1)])
    # Observations are appended as tokens between turns (never re-rendered).
    text = engine.decode(ep.input_ids)
    assert ep.turns == 3 and text.count("Wrong: the secret is") == 2
    assert "{{" not in text  # templates are rendered, never shown raw


async def test_env_failure_is_reported_not_raised(pool: SandboxPool) -> None:
    source = SEEDS["number_guess"].source.replace("def step(self, action):", "def step(self, action):\n        1 / 0")
    engine = scripted_actions(["guess 50"])
    ep = await play_episode(
        engine,
        pool,
        env_id="x",
        source=source,
        seed=0,
        hint=None,
        sampling=Sampling(),
        max_turns=2,
        max_context_tokens=100_000,
        no_action_penalty=-0.1,
    )
    assert ep.error is not None and "ZeroDivisionError" in ep.error


async def test_tiny_model_episode_aligns_tokens(pool: SandboxPool, tiny_model_dir: Path) -> None:
    from spade_async.engine.hf import HFEngine

    engine = HFEngine(tiny_model_dir, seed=0)
    ep = await play_episode(
        engine,
        pool,
        env_id="g",
        source=SEEDS["number_guess"].source,
        seed=1,
        hint=None,
        sampling=Sampling(max_new_tokens=8, stop=("}",)),
        max_turns=3,
        max_context_tokens=4096,
        no_action_penalty=-0.1,
        action_prefill=True,
    )
    assert ep.error is None and ep.turns == 3
    assert ep.n_actions == 3  # the prefill makes every turn an action
    sampled = [i for i, m in enumerate(ep.loss_mask) if m]
    assert 0 < len(sampled) <= 3 * 8 and ep.generated_tokens == len(sampled)
    assert all(lp <= 0.0 for lp in (ep.behaviour_logprobs[i] for i in sampled))
    prefill = engine.encode("\\boxed{")
    first = sampled[0]
    assert ep.input_ids[first - len(prefill) : first] == prefill and ep.loss_mask[first - 1] == 0
