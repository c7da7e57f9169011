"""The contract generated environment code must meet, and the names injected into its namespace.

Why a base class *and* pre-bound modules: small models write code that forgets imports or
helper boilerplate (the reference implementation pre-binds common modules for the same
reason). Injecting ``GameEnv`` with seeded RNG and ``\\boxed{}`` parsing, plus ``random``,
``math``, ``re`` ... means an otherwise-correct environment is not rejected for a missing
``import``. Everything here is pure standard library: this module is imported by the
sandbox's fork-server, which must stay small and never load torch.

A games environment is one class with::

    reset(seed=None) -> (observation: str, info: dict)
    step(action: str) -> (observation: str, reward: float, terminated: bool, truncated: bool, info: dict)
    solution() -> list[str]        # optional: actions that win from reset(seed)

reward in [0, 1]; deterministic for a given seed; fully observed text; actions are
``\\boxed{<command>}`` strings (the raw agent text is passed, ``self.parse_action`` extracts).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import heapq
import itertools
import json
import math
import random
import re
import string
from typing import Any, ClassVar


def parse_boxed(text: str) -> str | None:
    """The content of the last complete ``\\boxed{...}`` in ``text`` (stripped), or None.

    Braces are counted, so nested JSON such as ``\\boxed{{"name": "f", "arguments": {"x": 1}}}``
    is returned whole; an unclosed box is ignored.
    """
    text = text or ""
    found: str | None = None
    start = text.find("\\boxed{")
    while start >= 0:
        depth, i = 0, start + len("\\boxed")
        for i in range(start + len("\\boxed"), len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    found = text[start + len("\\boxed{") : i]
                    break
        else:
            break  # unclosed: nothing later can be complete either
        start = text.find("\\boxed{", i + 1)
    return found.strip() if found is not None else None


class ContractError(TypeError):
    """Generated code that does not meet the contract (a hook the environment must define)."""


class GameEnv:
    """Base class for text games. Subclasses implement ``_reset`` / ``_step`` or override
    ``reset`` / ``step`` directly; both styles are accepted by the validator."""

    max_turns: int = 20

    def __init__(self) -> None:
        self.rng = random.Random(0)
        self.turn = 0

    def seed_rng(self, seed: int | None) -> None:
        self.rng = random.Random(seed if seed is not None else 0)
        self.turn = 0

    @staticmethod
    def parse_action(action: str) -> str | None:
        """Extract the command from ``\\boxed{...}`` (or the bare text if no box is used)."""
        boxed = parse_boxed(action)
        if boxed is not None:
            return boxed
        stripped = (action or "").strip()
        return stripped or None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        self.seed_rng(seed)
        return self._reset()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return self._step(action)

    def _reset(self) -> tuple[str, dict[str, Any]]:  # pragma: no cover - contract hook
        raise ContractError("define reset() or _reset() in the environment class")

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:  # pragma: no cover
        raise ContractError("define step() or _step() in the environment class")


class ToolUseEnv(GameEnv):
    """Base class for tool-use environments: mock OpenAI-style tools over a mutable backend.

    Subclasses define ``tools`` (a list of OpenAI function schemas), ``instructions``
    (3-5 user instructions), ``_initial_state(rng)``, ``call_tool(name, args) -> str`` and
    ``_success(state, instruction_index) -> bool``. Actions are JSON tool calls inside
    ``\\boxed{...}``: ``\\boxed{{"name": "...", "arguments": {...}}}`` or ``\\boxed{done}``.
    """

    tools: ClassVar[list[dict[str, Any]]] = []
    instructions: ClassVar[list[str]] = []

    def _initial_state(self, rng: random.Random) -> dict[str, Any]:  # pragma: no cover
        raise ContractError("define _initial_state(rng) returning the backend state dict")

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:  # pragma: no cover
        raise ContractError("define call_tool(name, arguments)")

    def _success(self, state: dict[str, Any], index: int) -> bool:  # pragma: no cover
        raise ContractError("define _success(state, instruction_index)")

    def _reset(self) -> tuple[str, dict[str, Any]]:
        self.state = self._initial_state(self.rng)
        self.index = 0
        tool_list = ", ".join(t.get("function", t).get("name", "?") for t in self.tools)
        return (f"Tools: {tool_list}\nInstruction 1: {self.instructions[0]}", {"n_instructions": len(self.instructions)})

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        cmd = self.parse_action(action)
        if cmd is None:
            return "No action found. Use \\boxed{...}.", 0.0, False, self.turn >= self.max_turns, {}
        if cmd.strip().lower() == "done":
            if self._success(self.state, self.index):
                self.index += 1
                if self.index >= len(self.instructions):
                    return "All instructions completed.", 1.0, True, False, {}
                return f"Instruction {self.index + 1}: {self.instructions[self.index]}", self.index / len(self.instructions), False, False, {}
            return "Instruction not yet satisfied.", 0.0, False, self.turn >= self.max_turns, {}
        try:
            call = json.loads(cmd)
            result = self.call_tool(str(call["name"]), dict(call.get("arguments", {})))
        except Exception as exc:  # the agent's malformed call is feedback, not a crash
            result = f"error: {exc.__class__.__name__}: {exc}"
        return str(result), 0.0, False, self.turn >= self.max_turns, {}


INJECTED: dict[str, Any] = {
    "GameEnv": GameEnv,
    "ContractError": ContractError,
    "ToolUseEnv": ToolUseEnv,
    "parse_boxed": parse_boxed,
    "random": random,
    "math": math,
    "re": re,
    "json": json,
    "string": string,
    "itertools": itertools,
    "functools": functools,
    "collections": collections,
    "heapq": heapq,
    "dataclasses": dataclasses,
}
"""Names pre-bound in every generated environment's namespace."""

ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "random", "math", "re", "json", "string", "itertools", "functools", "collections",
        "heapq", "dataclasses", "typing", "copy", "fractions", "decimal", "statistics",
        "bisect", "enum", "operator", "textwrap", "abc", "numbers", "array", "time",
        "hashlib", "datetime", "__future__",
    }
)
"""Standard-library modules the fork-server pre-imports so envs can import them after the uid drop."""
