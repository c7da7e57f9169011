"""The environment contract: ``\\boxed{}`` parsing (nested JSON too) and the ToolUseEnv base (tool calls, state checks, rewards)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from spade_async.envs.contract import INJECTED, GameEnv, ToolUseEnv, parse_boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"think... \boxed{guess 50}", "guess 50"),
        (r"\boxed{a} then \boxed{ b c }", "b c"),
        (r'\boxed{{"name": "f", "arguments": {"x": {"y": 1}}}}', '{"name": "f", "arguments": {"x": {"y": 1}}}'),
        (r"\boxed{unclosed", None),
        (r"\boxed{a} \boxed{unclosed", "a"),
        ("no box", None),
        ("", None),
    ],
)
def test_parse_boxed(text: str, expected: str | None) -> None:
    assert parse_boxed(text) == expected


class Counter(ToolUseEnv):
    max_turns = 6
    tools: ClassVar = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add k to the counter.",
                "parameters": {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
            },
        },
        {"type": "function", "function": {"name": "fail", "parameters": {"type": "object"}}},
    ]

    def initial_state(self):
        return {"n": 0, "seen": {3, 1}}

    def instructions(self):
        return ["Make the counter 3.", "Make the counter 5."]

    def check(self, index):
        return self.state["n"] == (3, 5)[index]

    def add(self, k):
        self.state["n"] += int(k)
        return {"counter": self.state["n"]}

    def fail(self):
        raise ValueError("this tool always fails")


def test_tool_use_env_reveals_instructions_and_checks_the_state() -> None:
    env = Counter()
    obs, info = env.reset(seed=1)
    assert obs == "Instruction 1 of 2: Make the counter 3."
    assert info["n_instructions"] == 2 and info["satisfied_at_reset"] == [] and info["unbacked_tools"] == []
    assert [t["function"]["name"] for t in info["tools"]] == ["add", "fail"]
    obs, reward, done, _, step_info = env.step(env.call("add", k=3))
    assert obs.startswith('{"counter": 3}') and "Instruction 2 of 2" in obs
    assert (reward, done, step_info["satisfied"]) == (0.5, False, 1)
    assert step_info["next_instruction"] == "Instruction 2 of 2: Make the counter 5."
    # Malformed calls and failing tools are error observations, not crashes.
    assert env.step('<tool_call>{"name": "add", "arguments": {</tool_call>')[0].startswith(
        "error: the tool call is not valid JSON"
    )
    assert env.step(env.call("mul"))[0].startswith("error: unknown tool 'mul'")
    assert env.step(env.call("fail"))[0] == "error: ValueError: this tool always fails"
    assert env.step(env.call("add", x=1))[0].startswith("error: TypeError")
    obs, reward, done, truncated, _ = env.step('<tool_call>{"name": "add", "arguments": {"k": 2}}</tool_call>')
    assert (reward, done, truncated) == (1.0, True, False) and "All 2 instructions are done" in obs


def test_tool_use_env_scores_the_fraction_done_when_out_of_turns() -> None:
    env = Counter()
    env.reset(seed=0)
    env.step(env.call("add", k=3))
    results = [env.step("I have no idea") for _ in range(5)]
    assert results[-1][1:4] == (0.5, True, False)  # 1 of 2 instructions: final reward 0.5
    assert all(r[1] == 0.0 and not r[2] for r in results[:-1])
    env.reset(seed=0)
    assert [env.step("")[1] for _ in range(6)][-1] == 0.0  # doing nothing scores 0


def test_tool_use_state_digest_is_canonical() -> None:
    from spade_async.envs.contract import state_digest

    assert state_digest({"a": {1, 2}, "b": [1]}) == state_digest({"b": [1], "a": {2, 1}})
    assert state_digest({"a": 1}) != state_digest({"a": 2})


def test_game_env_is_deterministic_per_seed_and_injected() -> None:
    a, b = GameEnv(), GameEnv()
    a.seed_rng(7)
    b.seed_rng(7)
    assert a.rng.random() == b.rng.random()
    assert INJECTED["GameEnv"] is GameEnv and INJECTED["parse_boxed"] is parse_boxed


def test_missing_hooks_raise_a_contract_error_that_says_what_to_define() -> None:
    from spade_async.envs.contract import ContractError

    class OnlyStep(GameEnv):
        def step(self, action):
            return "", 0.0, True, False, {}

    with pytest.raises(ContractError, match=r"define reset\(\) or _reset\(\)"):
        OnlyStep().reset(seed=0)
