"""Admission checks that only a tool-use environment needs, each failure with its reason.

Why these checks: a tool-use environment is only trainable when its reward means what it
says. So, on top of the generic checks (loads, resets, survives garbage, ends, deterministic
observations), a candidate must show, in sandbox children:

- the ``ToolUseEnv`` contract at reset (tools, 3-5 instructions, the state digest);
- tool schemas that are valid JSON Schema of the supported kind, each backed by a method;
- a deterministic *backend state*: two resets with one seed, in one process and in a fresh
  one, give the same state digest (the observation alone can hide unseeded state);
- no instruction already satisfied at reset (it would pay reward for nothing);
- every instruction reachable: the designer's scripted ``solution()`` calls, each valid
  against its tool's schema and none failing, satisfy all instructions in order.

The generated code runs only in the children; this module reads their JSON replies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade_async.envs.tool_calls import parse_tool_calls
from spade_async.envs.tool_schemas import ToolBox, schema_problems
from spade_async.sandbox.errors import EnvTimeout, SandboxError
from spade_async.sandbox.interface import EnvPool, EnvSession

MIN_INSTRUCTIONS, MAX_INSTRUCTIONS = 3, 5
CHECKS = (
    "tool_contract",
    "tool_schemas",
    "tool_backed",
    "instruction_count",
    "deterministic_state",
    "unmet_at_reset",
    "reachable",
)
"""The check names this module adds to a ValidationResult."""


@dataclass
class ToolUseVerdict:
    """Outcome of the tool-use checks: failed checks with their reasons, and the solution's result."""

    failures: list[tuple[str, str]] = field(default_factory=list)
    ran: set[str] = field(default_factory=set)
    has_solution: bool = False
    solution_wins: bool | None = None
    _seen: set[tuple[str, str]] = field(default_factory=set, repr=False)

    def fail(self, check: str, reason: str) -> None:
        self.ran.add(check)
        if (check, reason) not in self._seen:  # a set: every reset is checked, each may repeat a reason
            self._seen.add((check, reason))
            self.failures.append((check, reason))

    def ok(self, check: str) -> None:
        self.ran.add(check)

    def apply(self, fail: Callable[[str, str], None], passed: Callable[[str], None]) -> None:
        """Report into a validator's ``fail(check, reason)`` / ``passed(check)``."""
        for check, reason in self.failures:
            fail(check, reason)
        for check in sorted(self.ran):
            passed(check)  # no-op for a check that already failed


MAX_LISTED = 10
"""Most entries of one info list (tools without a method, failing checks, instructions met at
reset) turned into reasons; the reasons stay few whatever the environment returns."""


def _listed(value: Any) -> list[Any]:
    """``value`` when it is a list, else empty (info fields come from the environment)."""
    return value if isinstance(value, list) else []


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _ToolUseChecks:
    def __init__(self, pool: EnvPool, source: str, seeds: tuple[int, ...], max_turns: int) -> None:
        self.pool, self.source, self.seeds, self.max_turns = pool, source, seeds, max_turns
        self.verdict = ToolUseVerdict()

    async def open(self) -> EnvSession | None:
        try:
            return await self.pool.open(self.source)
        except SandboxError as exc:
            self.verdict.fail("tool_contract", f"the code does not load: {exc}")
        return None

    async def reset(self, env: EnvSession, seed: int) -> dict[str, Any] | None:
        """reset(seed) and the tool contract checked on its info (at every reset, not only the first)."""
        try:
            _, info = await env.reset(seed)
        except SandboxError as exc:
            self.verdict.fail("tool_contract", f"reset(seed={seed}) failed: {exc}")
            return None
        return info if self.contract(info) else None

    def contract(self, info: dict[str, Any]) -> bool:
        v = self.verdict
        needed = ("tools", "instructions", "satisfied_at_reset", "unbacked_tools", "state_digest")
        if not all(key in info for key in needed):
            v.fail(
                "tool_contract",
                "reset() did not return the tool-use info: subclass ToolUseEnv and define "
                "tools, initial_state(), instructions() and check(index) instead of reset()/step()",
            )
            return False
        v.ok("tool_contract")
        problems = schema_problems(info["tools"])
        for problem in problems:
            v.fail("tool_schemas", problem)
        if not problems:
            v.ok("tool_schemas")
        unbacked = _listed(info.get("unbacked_tools"))
        for name in (_short(str(n), 64) for n in unbacked[:MAX_LISTED]):
            v.fail("tool_backed", f"tool {name!r} has no method: define {name}(self, ...) taking its arguments")
        errors = _listed(info.get("check_errors"))
        for error in errors[:MAX_LISTED]:
            v.fail("tool_backed", f"at reset, {_short(str(error), 300)}; check(index) must work for every instruction")
        if len(unbacked) + len(errors) > 2 * MAX_LISTED:
            v.fail("tool_backed", "many more tools without a method or failing checks than listed here")
        if not unbacked and not errors:
            v.ok("tool_backed")
        n = len(info["instructions"]) if isinstance(info["instructions"], list) else 0
        if not MIN_INSTRUCTIONS <= n <= MAX_INSTRUCTIONS:
            v.fail(
                "instruction_count",
                f"instructions() returned {n} instruction(s); write {MIN_INSTRUCTIONS} to "
                f"{MAX_INSTRUCTIONS}, each a separate user request",
            )
        else:
            v.ok("instruction_count")
        met = _listed(info.get("satisfied_at_reset"))
        for index in met[:MAX_LISTED]:
            text = info["instructions"][index] if isinstance(index, int) and 0 <= index < n else "?"
            v.fail(
                "unmet_at_reset",
                f"instruction {index + 1 if isinstance(index, int) else index} "
                f"({_short(str(text))!r}) is already satisfied at reset; check(index) must "
                "become true only after the agent's tool calls change the state",
            )
        if not met:
            v.ok("unmet_at_reset")
        return True

    async def phase_reset(self) -> dict[int, dict[str, Any]]:
        """One child: contract and schemas at the first seed, then each seed's state twice."""
        infos: dict[int, dict[str, Any]] = {}
        env = await self.open()
        if env is None:
            return infos
        async with env:
            for seed in self.seeds:
                info = await self.reset(env, seed)
                if info is None:
                    return {}
                infos[seed] = info
            for seed in self.seeds:
                again = await self.reset(env, seed)
                if again is None:
                    return {}
                if again.get("state_digest") != infos[seed].get("state_digest") or again.get("instructions") != infos[
                    seed
                ].get("instructions"):
                    self.verdict.fail(
                        "deterministic_state",
                        f"two resets with seed {seed} gave different backend "
                        "states or instructions; build them only from self.rng in initial_state()",
                    )
                    return infos
        return infos

    async def phase_fresh_process(self, infos: dict[int, dict[str, Any]]) -> None:
        env = await self.open()
        if env is None:
            return
        async with env:
            for seed, first in infos.items():
                info = await self.reset(env, seed)
                if info is None:
                    return
                if info.get("state_digest") != first.get("state_digest"):
                    self.verdict.fail(
                        "deterministic_state",
                        f"seed {seed} gave a different backend state in a fresh "
                        "process; draw randomness only from self.rng and keep the state JSON-like",
                    )
                    return
        self.verdict.ok("deterministic_state")

    async def phase_solution(self, infos: dict[int, dict[str, Any]]) -> None:
        wins = True
        for seed, info in infos.items():
            env = await self.open()
            if env is None:
                return
            async with env:
                wins = await self.play_solution(env, seed, info) and wins
                if not wins:
                    break
        self.verdict.solution_wins = wins
        if wins:
            self.verdict.ok("reachable")

    async def play_solution(self, env: EnvSession, seed: int, info: dict[str, Any]) -> bool:
        fail = self.verdict.fail
        box = ToolBox.from_info(info)
        instructions = [str(t) for t in info.get("instructions", [])]
        try:
            _, again = await env.reset(seed)
            if not self.contract(again):
                return False
            calls = await env.solution()
        except EnvTimeout as exc:
            fail("reachable", f"solution() for seed {seed} hangs: {exc}")
            return False
        except SandboxError as exc:
            fail("reachable", f"solution() for seed {seed} failed: {exc}")
            return False
        if calls is None:
            fail(
                "reachable",
                'define solution(self) returning the tool calls (self.call("tool", arg=value), ...) '
                "that satisfy every instruction; it proves each instruction is reachable",
            )
            return False
        self.verdict.has_solution = True
        satisfied = 0
        for k, action in enumerate(calls[: self.max_turns], start=1):
            parsed = parse_tool_calls(action)
            problem = box.check(parsed[0]) if parsed else "it is not a tool call"
            if problem is not None:
                fail("reachable", f"solution() call {k} for seed {seed} ({_short(action)}) is invalid: {problem}")
                return False
            try:
                result = await env.step(action)
            except SandboxError as exc:
                fail("reachable", f"solution() call {k} for seed {seed} ({_short(action)}) crashed the env: {exc}")
                return False
            text = str(result.info.get("result", result.obs))
            if text.startswith("error:"):
                fail("reachable", f"solution() call {k} for seed {seed} ({_short(action)}) failed: {_short(text, 200)}")
                return False
            satisfied = (
                int(result.info.get("satisfied", satisfied))
                if isinstance(result.info.get("satisfied"), int)
                else satisfied
            )
            if result.terminated or result.truncated:
                if result.terminated and abs(result.reward - 1.0) <= 1e-6:
                    return True
                break
        index = min(satisfied, max(len(instructions) - 1, 0))
        text = instructions[index] if instructions else "?"
        fail(
            "reachable",
            f"instruction {index + 1} ({_short(text)!r}) is never satisfied by solution() for seed "
            f"{seed}: after its {len(calls)} call(s), {satisfied} of {len(instructions)} instructions "
            "hold; fix check(index) or the calls",
        )
        return False


async def check_tool_use(pool: EnvPool, source: str, seeds: tuple[int, ...], max_turns: int) -> ToolUseVerdict:
    """Run the tool-use admission checks on ``source`` in sandbox children; never raises for bad code."""
    checks = _ToolUseChecks(pool, source, seeds or (0,), max_turns)
    infos = await checks.phase_reset()
    if infos and not any(c == "deterministic_state" for c, _ in checks.verdict.failures):
        await checks.phase_fresh_process(infos)
    if infos and not any(c in ("tool_contract", "tool_schemas") for c, _ in checks.verdict.failures):
        await checks.phase_solution(infos)
    return checks.verdict
