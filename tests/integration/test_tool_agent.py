"""Tool-use episodes against sandboxed seed environments: scripted policies and the tiny model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_async.config import SandboxConfig
from spade_async.engine.base import Sampling
from spade_async.envs.seeds import load_seeds
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.play.tool_agent import TOOL_PREFILL, play_tool_episode
from spade_async.testing import ScriptedEngine

pytestmark = pytest.mark.anyio
SEEDS = {s.name: s for s in load_seeds("all", "tool_use")}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0)) as p:
        yield p


async def env_facts(pool: SandboxPool, source: str, seed: int) -> tuple[list[str], int]:
    """The seed's solution calls and its own turn budget."""
    async with await pool.open(source) as env:
        await env.reset(seed)
        solution = await env.solution()
        # The env's budget: step with no call until it ends itself.
        turns = 0
        while True:
            turns += 1
            result = await env.step("")
            if result.terminated or result.truncated:
                break
    assert solution
    return solution, turns


async def play(engine: ScriptedEngine, pool: SandboxPool, name: str, seed: int, max_turns: int, **kw: object):
    return await play_tool_episode(
        engine,
        pool,
        env_id=name,
        source=SEEDS[name].source,
        seed=seed,
        hint=kw.pop("hint", None),
        sampling=Sampling(max_new_tokens=400),  # type: ignore[arg-type]
        max_turns=max_turns,
        max_context_tokens=100_000,
        no_action_penalty=kw.pop("no_action_penalty", -0.1),  # type: ignore[arg-type]
        **kw,
    )  # type: ignore[arg-type]


def scripted(replies: list[str], fallback: str = "I am done.") -> ScriptedEngine:
    queue = list(replies)
    return ScriptedEngine(policies={"agent": lambda prompt, rng: queue.pop(0) if queue else fallback})


@pytest.mark.parametrize("name", sorted(SEEDS))
async def test_solution_scores_one_and_doing_nothing_scores_zero(pool: SandboxPool, name: str) -> None:
    solution, budget = await env_facts(pool, SEEDS[name].source, seed=4)
    # The designer's solution, one Qwen3-style call per turn: every instruction done.
    ep = await play(scripted([f"<tool_call>\n{c}\n</tool_call>" for c in solution]), pool, name, 4, budget)
    assert ep.error is None
    assert (ep.outcome, ep.truncated, ep.n_actions, ep.turns) == (1.0, False, len(solution), len(solution))
    # Doing nothing: the environment runs out of turns by its own rule and scores 0 of n.
    ep = await play(scripted([]), pool, name, 4, budget, no_action_penalty=0.0)
    assert ep.error is None and ep.n_actions == 0 and ep.turns == budget
    assert (ep.outcome, ep.truncated) == (0.0, False)
    assert "Out of turns: 0 of" not in ep.transcript[-1]["text"]  # the agent is shown the harness reminder


async def test_openai_style_calls_and_several_calls_per_turn(pool: SandboxPool) -> None:
    solution, _ = await env_facts(pool, SEEDS["room_lights"].source, seed=1)
    # All three calls in one turn, as an OpenAI assistant message with string arguments.
    import json

    objs = [json.loads(c) for c in solution]
    message = {
        "tool_calls": [
            {"type": "function", "function": {"name": o["name"], "arguments": json.dumps(o["arguments"])}} for o in objs
        ]
    }
    engine = scripted([json.dumps(message)])
    ep = await play(engine, pool, "room_lights", 1, 3)
    assert (ep.outcome, ep.turns, ep.n_actions) == (1.0, 1, 3)


async def test_malformed_calls_get_error_observations_and_cost_a_turn(pool: SandboxPool) -> None:
    replies = [
        '<tool_call>{"name": "turn_on", "arguments": {"room": </tool_call>',  # bad JSON
        '<tool_call>{"name": "turn_off", "arguments": {}}</tool_call>',  # unknown tool
        '<tool_call>{"name": "turn_on", "arguments": {"room": "moon"}}</tool_call>',  # not in the enum
        '<tool_call>{"name": "turn_on", "arguments": {}}</tool_call>',  # missing argument
        "Sure, I turned it on.",  # no call at all
    ]
    engine = scripted(replies)
    ep = await play(engine, pool, "room_lights", 0, 6, hint="Copy the room name.")
    assert ep.error is None and ep.n_actions == 0 and ep.turns == 6 and not ep.truncated
    shown = [t["text"] for t in ep.transcript if t["role"] == "observation"][1:]
    assert shown[0].startswith("error: the tool call is not valid JSON")
    assert shown[1] == "error: unknown tool 'turn_off'; the tools are: turn_on"
    assert shown[2].startswith("error: invalid arguments for turn_on: room: 'moon' is not one of")
    assert shown[3] == "error: invalid arguments for turn_on: 'room' is a required property"
    assert shown[4].startswith("No tool call found.") and "Instruction 1 of 3" in shown[4]
    assert ep.outcome == -0.1  # no valid call in the whole episode: the format penalty
    # The hint leads the first user turn; the results are tool messages in the token stream.
    text = engine.decode(ep.input_ids)
    assert text.index("Copy the room name.") < text.index("Instruction 1 of 3")
    assert text.count("\x02tool\n") == 4 and "\x02user\nNo tool call found." in text


async def test_loss_mask_covers_exactly_the_sampled_tokens(pool: SandboxPool) -> None:
    solution, _ = await env_facts(pool, SEEDS["todo_list"].source, seed=2)
    engine = scripted([f"<tool_call>{c}</tool_call>" for c in solution])
    ep = await play(engine, pool, "todo_list", 2, 6)
    assert len(ep.input_ids) == len(ep.loss_mask) == len(ep.behaviour_logprobs)
    trained = engine.decode([t for t, m in zip(ep.input_ids, ep.loss_mask, strict=True) if m])
    assert trained == "".join(t["text"] for t in ep.transcript if t["role"] == "agent")
    text = engine.decode(ep.input_ids)
    # Each result is a tool message; each newly revealed instruction a user message after it.
    assert text.count("\x02tool\n") == 2 and "\x02user\nInstruction 3 of 3" in text
    assert (
        "<tools>" in text and '"name": "add_task"' in text
    )  # the template has no tool support: listed in the system prompt


async def test_tiny_model_episode_with_prefill_aligns_tokens(pool: SandboxPool, tiny_model_dir: Path) -> None:
    from spade_async.engine.hf import HFEngine

    engine = HFEngine(tiny_model_dir, seed=0)
    ep = await play_tool_episode(
        engine,
        pool,
        env_id="p",
        source=SEEDS["press_button"].source,
        seed=0,
        hint=None,
        sampling=Sampling(max_new_tokens=12, stop=("</tool_call>",)),
        max_turns=3,
        max_context_tokens=4096,
        no_action_penalty=-0.1,
        action_prefill=True,
    )
    assert ep.error is None and 1 <= ep.turns <= 3
    sampled = [i for i, m in enumerate(ep.loss_mask) if m]
    assert 0 < len(sampled) <= 3 * 12 and ep.generated_tokens == len(sampled)
    prefill = engine.encode(TOOL_PREFILL)
    assert ep.input_ids[sampled[0] - len(prefill) : sampled[0]] == prefill and ep.loss_mask[sampled[0] - 1] == 0
    assert all(t["text"].startswith(TOOL_PREFILL) for t in ep.transcript if t["role"] == "agent")
    text = engine.tokenizer.decode(ep.input_ids)
    assert "<|im_start|>tool\n" in text or ep.turns == 1  # results come back as tool messages (ChatML role)


NATIVE_TOOLS_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ messages[0]['content'] }}\n<tools>\n{% for t in tools %}{{ t | tojson }}\n"
    "{% endfor %}</tools><|im_end|>\n{% endif %}"
    "{% for m in messages %}{% if not (tools and loop.first) %}{% if m['role'] == 'tool' %}<|im_start|>user\n"
    "<tool_response>\n{{ m['content'] }}\n</tool_response><|im_end|>\n{% else %}<|im_start|>{{ m['role'] }}\n"
    "{{ m['content'] }}<|im_end|>\n{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A Qwen3-like template (tools rendered by the template, tool results as <tool_response>)."""


async def test_a_template_with_tool_support_renders_tools_and_results_natively(
    pool: SandboxPool, tiny_model_dir: Path
) -> None:
    from spade_async.engine.hf import HFEngine

    engine = HFEngine(tiny_model_dir, seed=0)
    engine.tokenizer.chat_template = NATIVE_TOOLS_TEMPLATE
    solution, _ = await env_facts(pool, SEEDS["press_button"].source, seed=0)
    completions = iter(solution)

    async def generate(requests):  # scripted text through the real tokenizer
        from spade_async.engine.base import Completion

        text = f"<tool_call>{next(completions)}</tool_call>"
        ids = [*engine.encode(text), engine.eos_token_id]
        return [Completion(list(requests[0].prompt_ids), ids, [-1.0] * len(ids), text, "stop", 0)]

    engine.generate = generate  # type: ignore[method-assign]
    ep = await play_tool_episode(
        engine,
        pool,
        env_id="p",
        source=SEEDS["press_button"].source,
        seed=0,
        hint=None,
        sampling=Sampling(max_new_tokens=64),
        max_turns=3,
        max_context_tokens=4096,
        no_action_penalty=-0.1,
    )
    assert ep.outcome == 1.0
    text = engine.tokenizer.decode(ep.input_ids)
    assert '<tools>\n{"type": "function", "function": {"name": "press_button"' in text
    assert "You may call one or more functions" not in text  # not listed a second time by the harness
    assert text.count("<tool_response>\nClick.") == 2
