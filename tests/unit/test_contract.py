"""The environment contract: ``\\boxed{}`` parsing (nested JSON too) and the ToolUseEnv base."""

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
    tools: ClassVar = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    instructions: ClassVar = ["Make the counter 3.", "Make the counter 5."]

    def _initial_state(self, rng):
        return {"n": 0}

    def call_tool(self, name, arguments):
        if name != "add":
            raise KeyError(name)
        self.state["n"] += int(arguments["k"])
        return f"counter = {self.state['n']}"

    def _success(self, state, index):
        return state["n"] == (3, 5)[index]


def test_tool_use_env_runs_sequential_instructions() -> None:
    env = Counter()
    obs, info = env.reset(seed=1)
    assert "add" in obs and info["n_instructions"] == 2
    assert env.step(r'\boxed{{"name": "add", "arguments": {"k": 3}}}')[0] == "counter = 3"
    obs, reward, done, _, _ = env.step(r"\boxed{done}")
    assert not done and reward == 0.5 and "Instruction 2" in obs
    assert "error: KeyError" in env.step(r'\boxed{{"name": "mul", "arguments": {}}}')[0]
    env.step(r'\boxed{{"name": "add", "arguments": {"k": 2}}}')
    assert env.step(r"\boxed{done}")[1:3] == (1.0, True)


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
