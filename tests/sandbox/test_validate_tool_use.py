"""Tool-use admission: the seeds pass; each way a tool-use env can be broken is rejected with its reason."""

from __future__ import annotations

import pytest

from spade_async.admission.tool_use import CHECKS
from spade_async.admission.validate import validate_source
from spade_async.envs.seeds import load_seeds
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import benign

pytestmark = pytest.mark.anyio

COUNTER = """SKILL = "Mathematical Reasoning"
HINT = "Add the difference."
DESCRIPTION = "A counter."


class Counter(ToolUseEnv):
    max_turns = 8
    tools = [{"type": "function", "function": {"name": "add", "description": "Add k to the counter.",
              "parameters": {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]}}}]

    def initial_state(self):
        self.goals = [self.rng.randint(1, 3), 5, 9]
        return {"n": 0}

    def instructions(self):
        return [f"Make the counter {g}." for g in self.goals]

    def check(self, index):
        return self.state["n"] == self.goals[index]

    def add(self, k):
        self.state["n"] += k
        return {"n": self.state["n"]}

    def solution(self):
        return [self.call("add", k=self.goals[0]), self.call("add", k=5 - self.goals[0]), self.call("add", k=4)]
"""


def variant(old: str, new: str) -> str:
    assert old in COUNTER
    return COUNTER.replace(old, new)


async def test_the_counter_and_every_tool_use_seed_are_admitted(pool: SandboxPool) -> None:
    for name, source in [("counter", COUNTER), *((s.name, s.source) for s in load_seeds("all", "tool_use"))]:
        result = await validate_source(pool, source, domain="tool_use")
        assert result.admitted, (name, result.reasons)
        assert result.has_solution and result.solution_wins is True
        assert set(CHECKS) <= set(result.checks), name


@pytest.mark.parametrize(
    ("source", "check", "reason"),
    [
        # Non-deterministic reset: the state comes from the global RNG, the observation does not show it.
        (
            variant('return {"n": 0}', 'return {"n": 0, "noise": random.random()}'),
            "deterministic_state",
            "two resets with seed 0 gave different backend states",
        ),
        # Unreachable: the third goal can never be met by the solution's calls.
        (
            variant('self.call("add", k=4)]', 'self.call("add", k=3)]'),
            "reachable",
            "instruction 3 ('Make the counter 9.') is never satisfied by solution() for seed 0: after its 3 call(s), "
            "2 of 3 instructions hold",
        ),
        # Already met at reset.
        (
            variant(
                'return self.state["n"] == self.goals[index]',
                'return self.state["n"] == self.goals[index] or (index == 1 and self.state["n"] == 0)',
            ),
            "unmet_at_reset",
            "instruction 2 ('Make the counter 5.') is already satisfied at reset",
        ),
        (
            variant('"type": "integer"}}', '"type": "string", "pattern": "(a+)+$"}}'),
            "tool_schemas",
            "tool 'add' parameters.properties.k uses 'pattern'",
        ),
        (
            variant('"type": "integer"}}', '"type": "integr"}}'),
            "tool_schemas",
            "tool 'add': parameters is not valid JSON Schema",
        ),
        (
            variant('"name": "add"', '"name": "plus"'),
            "tool_backed",
            "tool 'plus' has no method: define plus(self, ...)",
        ),
        (variant("    def solution(self):", "    def solution_later(self):"), "reachable", "define solution(self)"),
        (
            variant('self.call("add", k=self.goals[0])', 'self.call("add", k=str(self.goals[0]))'),
            "reachable",
            "solution() call 1 for seed 0",
        ),
        (
            variant("[self.rng.randint(1, 3), 5, 9]", "[self.rng.randint(1, 3), 5]"),
            "instruction_count",
            "instructions() returned 2 instruction(s); write 3 to 5",
        ),
        (
            variant('        return self.state["n"] == self.goals[index]', '        return self.state["x"]'),
            "tool_backed",
            "at reset, check(0) raised KeyError",
        ),
    ],
)
async def test_broken_tool_use_envs_are_rejected_with_their_reason(
    pool: SandboxPool, source: str, check: str, reason: str
) -> None:
    result = await validate_source(pool, source, domain="tool_use", seeds=(0, 1))  # messages name the seed
    assert not result.admitted
    assert result.checks[check] is False, result.checks
    assert any(reason in r for r in result.reasons), result.reasons


async def test_a_game_is_not_a_tool_use_env(pool: SandboxPool) -> None:
    result = await validate_source(pool, benign("guess"), domain="tool_use", max_turns=8)
    assert not result.admitted and result.checks["tool_contract"] is False
    assert any("subclass ToolUseEnv" in r for r in result.reasons)
