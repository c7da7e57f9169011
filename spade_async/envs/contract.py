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

A tool-use environment subclasses ``ToolUseEnv`` (see its docstring): tools as function-calling
JSON schemas backed by methods over a mutable state dict, 3-5 instructions revealed one at a
time, success checked on the state, reward = fraction of instructions satisfied.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import heapq
import itertools
import json
import math
import random
import re
import string
from typing import Any, ClassVar

from spade_async.envs.tool_calls import CallError, format_result, parse_tool_calls


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
    """Base class for tool-use environments: mock function-calling tools over a mutable backend.

    A subclass defines::

        tools = [...]                 # OpenAI function schemas: {"type": "function", "function":
                                      #   {"name", "description", "parameters": <JSON Schema object>}}
        def initial_state(self)       # -> dict: the backend (a store, a calendar, an account),
                                      #    drawn only from self.rng; JSON-like values
        def instructions(self)        # -> list of 3-5 user instructions (may read self.state)
        def check(self, index)        # -> bool: is instruction `index` satisfied by self.state?
        def <tool name>(self, **arguments)  # one method per tool: reads/changes self.state and
                                      #    returns the result (str, or data shown as JSON);
                                      #    raise ValueError("...") to report a failed call
        def solution(self)            # -> list of calls, each self.call("tool", arg=value),
                                      #    that satisfies every instruction from reset(seed)

    Episode: the first instruction is shown at reset; each step executes one tool call (the
    agent harness sends a canonical ``{"name", "arguments"}`` JSON object; raw model text is
    parsed too). After every call the current instruction is checked on the *state*: when it
    holds, the next one is revealed (step reward 1/n per newly satisfied instruction). The
    episode terminates when all are satisfied (reward 1.0) or when ``max_turns`` calls have been
    made (reward = fraction satisfied). A malformed call or a tool that raises is an error
    observation, never a crash.
    """

    max_turns: int = 12
    tools: ClassVar[list[dict[str, Any]]] = []
    result_limit: int = 2000
    """Tool results longer than this many characters are cut."""

    def initial_state(self) -> dict[str, Any]:  # pragma: no cover - contract hook
        raise ContractError("define initial_state(self) returning the backend state dict")

    def instructions(self) -> list[str]:  # pragma: no cover - contract hook
        raise ContractError("define instructions(self) returning 3-5 instruction strings")

    def check(self, index: int) -> bool:  # pragma: no cover - contract hook
        raise ContractError("define check(self, index) returning whether instruction `index` holds on self.state")

    @staticmethod
    def call(name: str, **arguments: Any) -> str:
        """A tool call as the JSON text ``solution()`` returns: ``self.call("deposit", amount=5)``."""
        return json.dumps({"name": name, "arguments": arguments})

    def tool_names(self) -> list[str]:
        return [str(tool_schema(t).get("name", "")) for t in self.tools]

    def _holds(self, index: int, errors: list[str]) -> bool:
        try:
            return bool(self.check(index))
        except Exception as exc:  # a broken criterion is reported by admission, not fatal here
            errors.append(f"check({index}) raised {exc.__class__.__name__}: {exc}")
            return False

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        self.seed_rng(seed)
        state = self.initial_state()
        if not isinstance(state, dict):
            raise ContractError(f"initial_state() must return a dict, got {type(state).__name__}")
        self.state = state
        self.tasks = [str(t) for t in self.instructions()]
        if not self.tasks:
            raise ContractError("instructions() returned no instruction")
        self.current = 0
        errors: list[str] = []
        met = [i for i in range(len(self.tasks)) if self._holds(i, errors)]
        names = self.tool_names()
        info = {
            "tools": [dict(t) for t in self.tools],
            "instructions": list(self.tasks),
            "n_instructions": len(self.tasks),
            "satisfied_at_reset": met,
            "unbacked_tools": [n for n in names if n in RESERVED_NAMES or not callable(getattr(self, n, None))],
            "check_errors": errors,
            "state_digest": state_digest(self.state),
        }
        return f"Instruction 1 of {len(self.tasks)}: {self.tasks[0]}", info

    def execute(self, action: str) -> str:
        """Run the first call in ``action``; the result text (an ``error: ...`` line on failure)."""
        calls = parse_tool_calls(action)
        if not calls:
            return (
                "error: no tool call found. Call one tool: "
                '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'
            )
        call = calls[0]
        if isinstance(call, CallError):
            return f"error: {call.message}"
        names = self.tool_names()
        if call.name not in names or call.name in RESERVED_NAMES:
            return f"error: unknown tool {call.name!r}; the tools are: {', '.join(names)}"
        try:
            value = getattr(self, call.name)(**call.arguments)
        except Exception as exc:  # the tool's own failure is its answer
            return f"error: {exc.__class__.__name__}: {exc}"
        return format_result(value, self.result_limit)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        result = self.execute(action)
        before = self.current
        errors: list[str] = []
        while self.current < len(self.tasks) and self._holds(self.current, errors):
            self.current += 1
        n = len(self.tasks)
        info: dict[str, Any] = {"result": result, "satisfied": self.current, "n_instructions": n}
        if errors:
            info["check_errors"] = errors
        if self.current >= n:
            return f"{result}\n\nAll {n} instructions are done.", 1.0, True, False, info
        obs = result
        if self.current > before:
            info["next_instruction"] = f"Instruction {self.current + 1} of {n}: {self.tasks[self.current]}"
            obs += "\n\n" + info["next_instruction"]
        if self.turn >= self.max_turns:
            return (
                f"{obs}\n\nOut of turns: {self.current} of {n} instructions done.",
                self.current / n,
                True,
                False,
                info,
            )
        return obs, (self.current - before) / n, False, False, info


def tool_schema(entry: Any) -> dict[str, Any]:
    """The function part of a tool entry (``{"type": "function", "function": {...}}`` or bare)."""
    if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
        return entry["function"]
    return entry if isinstance(entry, dict) else {}


def _canonical(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return repr(value)


def state_digest(state: Any) -> str:
    """A fingerprint of the backend state (equal states, equal digests, across processes)."""
    text = json.dumps(state, sort_keys=True, default=_canonical)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


RESERVED_NAMES: frozenset[str] = frozenset({*dir(ToolUseEnv), "state", "tasks", "current", "rng", "turn"})
"""Names a tool may not have: the base class's own methods and attributes."""


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
        "random",
        "math",
        "re",
        "json",
        "string",
        "itertools",
        "functools",
        "collections",
        "heapq",
        "dataclasses",
        "typing",
        "copy",
        "fractions",
        "decimal",
        "statistics",
        "bisect",
        "enum",
        "operator",
        "textwrap",
        "abc",
        "numbers",
        "array",
        "time",
        "hashlib",
        "datetime",
        "__future__",
    }
)
"""Standard-library modules the fork-server pre-imports so envs can import them after the uid drop."""
