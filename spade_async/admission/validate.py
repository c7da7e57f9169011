"""Admission of a candidate environment: static and dynamic checks, each with a reason a
person (or the designer's repair prompt) can act on.

Why everything runs in sandbox children: the source is never parsed or compiled in the
trainer. The trainer only checks the size. Why the static facts (syntax, the import list) come
from their own child: a child that executed the candidate is under the candidate's control
(it can answer the protocol itself and report any imports it likes), so the static phase asks
a fresh child that only parses the source with ``ast`` and never runs it. Each dynamic phase
uses a fresh child too, so a crash in one check does not hide the result of the next one, and
determinism is checked across two processes (hidden global state, time or unseeded
randomness show up as different traces). Why a catch-all around the phases: admission must
never raise for any candidate, whatever its replies make the controller do.

Why validation is drawn, not fixed: an environment that can tell a check from play can behave
while it is checked and let any action win afterwards. So the seeds come from the same range
as play seeds and the probe actions (a shuffled mix of garbage and meaningless ``\\boxed{...}``
words) are drawn per check from the caller's RNG (one per run), a meaningless action that wins
rejects the candidate, and the result carries a :class:`Promise` (a seed, an action and what
the environment answered) that play replays later, in play conditions (``selfplay.audit``).
Why a latency budget: an environment that uses most of ``call_timeout_s`` on every call stalls
every play without ever timing out; ``sandbox.admission_call_budget_s`` rejects it here.
"""

from __future__ import annotations

import logging
import random
import secrets
import string
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from spade_async.admission.tool_use import check_tool_use
from spade_async.envs.contract import ALLOWED_IMPORTS
from spade_async.sandbox.errors import EnvProtocolError, EnvTimeout, RewardOutOfRange, SandboxError
from spade_async.sandbox.interface import EnvPool, EnvSession

GARBAGE_ACTIONS: tuple[str, ...] = (
    "\\boxed{xyzzy}",
    "",
    "\\boxed{}",
    "hello there",
    "\\boxed{" + "9" * 300 + "}",
    "✓ ünïcödé \x00 \\boxed{-1}",
    "{" * 40,
    "\\boxed{0}",
)
"""Actions an agent may well send; none of them may crash an admitted env."""
WIN_REWARD = 1.0
"""A play wins when the step that terminates it has this reward (within 1e-6)."""
PLAY_SEEDS = 2**31
"""Seeds are drawn from ``range(PLAY_SEEDS)``, the range play seeds come from."""
OVER_BUDGET_CALLS = 3
"""Calls over ``admission_call_budget_s`` that reject a candidate (one or two may be load spikes)."""
NO_CALL = ""
"""What a tool-use environment is stepped with for a turn without a valid call (``tool_agent``)."""


def meaningless_action(rng: random.Random, domain: str = "games") -> str:
    """An action no honest environment rewards: a random word in a box (games), or the empty
    action the tool-use harness sends for a turn without a valid call."""
    if domain == "tool_use" and rng.random() < 0.5:
        return NO_CALL
    word = "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(7, 12)))
    return "\\boxed{" + word + "}"


def wins(reward: float, terminated: bool) -> bool:
    """True when a step that ended the episode paid the win reward."""
    return terminated and abs(reward - WIN_REWARD) <= 1e-6


@dataclass(frozen=True)
class Promise:
    """What admission saw, for play to replay: after ``reset(seed)``, ``actions`` gave ``answers``
    (``answers[0]`` is the reset observation; then ``(obs, reward, terminated, truncated)`` per action)."""

    seed: int
    actions: tuple[str, ...]
    answers: tuple[tuple[str, float, bool, bool], ...]


MAX_REASONS = 20
"""Most distinct reasons one validation keeps (the rest are counted in a last line); the repair
prompt and the store get a bounded list, whatever an environment makes the checks report."""
MAX_REASON_CHARS = 1000
"""Longest reason kept (longer ones are cut)."""

Trace = list[tuple[str, float, bool, bool]]
log = logging.getLogger(__name__)


@dataclass
class ValidationResult:
    admitted: bool
    reasons: list[str]
    checks: dict[str, bool]
    has_solution: bool
    solution_wins: bool | None
    class_name: str | None
    constants: dict[str, str] = field(default_factory=dict)
    """Module-level UPPER_CASE string constants (``HINT``, ``SKILL``, ``DESCRIPTION``), as read
    by the inspecting child (the trainer never parses generated code)."""
    promise: Promise | None = None
    """The first seed's reset and first (meaningless) action with their answers, for the play audit."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Validator:
    def __init__(
        self,
        pool: EnvPool,
        source: str,
        max_turns: int,
        seeds: tuple[int, ...],
        rng: random.Random,
        domain: str = "games",
    ) -> None:
        self.pool, self.source, self.max_turns, self.seeds = pool, source, max_turns, seeds
        self.meaningless: set[str] = set()
        self.probes = {seed: self.draw_probes(rng, domain) for seed in seeds}
        self.budget_s = pool.cfg.admission_call_budget_s
        self.over_budget: list[float] = []
        self.promise: Promise | None = None
        self.reasons: list[str] = []
        self.checks: dict[str, bool] = {}
        self.class_name: str | None = None
        self.has_solution = False
        self.solution_wins: bool | None = None
        self.constants: dict[str, str] = {}
        self._seen: set[str] = set()
        self.dropped = 0

    def fail(self, check: str, reason: str) -> None:
        """Record a failed check; reasons are de-duplicated (a set: linear in their number), cut to
        :data:`MAX_REASON_CHARS` and capped at :data:`MAX_REASONS` (the rest are counted)."""
        self.checks[check] = False
        reason = reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 3] + "..."
        if reason in self._seen:
            return
        self._seen.add(reason)
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(reason)
        else:
            self.dropped += 1

    def passed(self, check: str) -> None:
        self.checks.setdefault(check, True)

    def draw_probes(self, rng: random.Random, domain: str) -> list[str]:
        """This seed's actions: a meaningless one first (what the promise records), then garbage
        and more meaningless ones in a drawn order."""
        drawn = [meaningless_action(rng, domain) for _ in range(len(GARBAGE_ACTIONS) + 1)]
        self.meaningless.update(drawn, ("\\boxed{xyzzy}", NO_CALL))
        first, pool = drawn[0], list(GARBAGE_ACTIONS) + drawn[1:]
        rng.shuffle(pool)
        return [first, *pool]

    def result(self) -> ValidationResult:
        admitted = bool(self.checks) and all(self.checks.values())
        reasons = self.reasons + ([f"... and {self.dropped} more reasons not listed"] if self.dropped else [])
        return ValidationResult(
            admitted,
            reasons,
            self.checks,
            self.has_solution,
            self.solution_wins,
            self.class_name,
            self.constants,
            self.promise if admitted else None,
        )

    async def timed(self, call: Any) -> Any:
        """Await ``call`` and count it against the latency budget."""
        started = time.perf_counter()
        result = await call
        took = time.perf_counter() - started
        if took > self.budget_s:
            self.over_budget.append(took)
            if len(self.over_budget) == OVER_BUDGET_CALLS:
                self.fail(
                    "latency",
                    f"{OVER_BUDGET_CALLS} calls took longer than the {self.budget_s * 1e3:.0f} ms "
                    f"budget per call (up to {max(self.over_budget) * 1e3:.0f} ms); reset() and step() "
                    "must answer quickly, do heavy work once in __init__",
                )
        return result

    async def open(self) -> EnvSession | None:
        try:
            return await self.pool.open(self.source)
        except EnvTimeout:
            self.fail(
                "loads",
                f"loading the code took longer than {self.pool.cfg.spawn_timeout_s:g} s "
                "(an endless loop or heavy work at import time?)",
            )
        except SandboxError as exc:
            self.fail("loads", f"the code does not load: {exc}")
        return None

    async def trace(self, env: EnvSession, seed: int) -> Trace | None:
        """reset(seed), then garbage actions until the episode ends or max_turns; None on failure."""
        try:
            obs, _ = await self.timed(env.reset(seed))
        except SandboxError as exc:
            self.fail("reset", f"reset(seed={seed}) failed: {exc}")
            return None
        self.passed("reset")
        steps: Trace = [(obs, 0.0, False, False)]
        probes = self.probes[seed]
        for turn in range(self.max_turns):
            if len(self.over_budget) >= OVER_BUDGET_CALLS:
                return None
            action = probes[turn % len(probes)]
            try:
                result = await self.timed(env.step(action))
            except RewardOutOfRange as exc:
                self.fail("reward_range", f"step({action!r}) after reset(seed={seed}): {exc}")
                return None
            except EnvProtocolError as exc:
                self.fail("step", f"step({action!r}) after reset(seed={seed}) returned an invalid result: {exc}")
                return None
            except EnvTimeout as exc:
                self.fail("step", f"step({action!r}) after reset(seed={seed}) hangs: {exc}")
                return None
            except SandboxError as exc:
                self.fail(
                    "garbage",
                    f"step({action!r}) after reset(seed={seed}) crashed: {exc}. "
                    "An invalid action must give feedback in the observation, not raise.",
                )
                return None
            self.passed("step")
            self.passed("garbage")
            if action in self.meaningless and wins(result.reward, result.terminated):
                self.fail(
                    "meaningless_loses",
                    f"the meaningless action {action!r} won (reward {result.reward!r}) "
                    f"after reset(seed={seed}); only a correct solution may win",
                )
            steps.append((result.obs, result.reward, result.terminated, result.truncated))
            if seed == self.seeds[0] and turn == 0 and self.promise is None:
                self.promise = Promise(seed, (action,), (steps[0], steps[1]))
            if result.terminated or result.truncated:
                self.passed("ends")
                self.passed("reward_range")
                return steps
        self.fail(
            "ends",
            f"the episode (seed {seed}) did not end within {self.max_turns} turns of invalid actions; "
            "set truncated=True once the turn limit is reached",
        )
        return steps

    async def phase_static(self) -> bool:
        """Syntax and imports, from a child that parses the source and never runs it; False = stop."""
        try:
            facts = await self.pool.inspect(self.source)
        except SandboxError as exc:
            self.fail("loads", f"the code could not be inspected: {exc}")
            return False
        self.constants = {k: v for k, v in facts.get("strings", {}).items() if isinstance(v, str)}
        if facts.get("syntax_error"):
            self.fail("loads", f"the code does not load: {facts['syntax_error']}")
            return False
        bad = sorted(m for m in facts.get("imports", []) if m not in ALLOWED_IMPORTS)
        if bad:
            self.fail(
                "imports",
                f"imports {', '.join(bad)}, which the sandbox does not provide; "
                f"use only: {', '.join(sorted(ALLOWED_IMPORTS - {'__future__'}))}",
            )
        dynamic = facts.get("dynamic", [])
        if dynamic:
            self.fail(
                "imports",
                f"uses {', '.join(dynamic)}, which reaches modules around the import rule; "
                "import only the allowed modules with plain import statements",
            )
        self.passed("imports")
        return True

    async def phase_traces(self) -> dict[int, Trace]:
        env = await self.open()
        if env is None:
            return {}
        async with env:
            self.passed("loads")
            self.class_name, self.has_solution = env.class_name, env.has_solution
            traces: dict[int, Trace] = {}
            for seed in self.seeds:
                trace = await self.trace(env, seed)
                if trace is None:
                    return traces
                traces[seed] = trace
            try:
                again, _ = await env.reset(self.seeds[0])
            except SandboxError as exc:
                self.fail("reset", f"a second reset(seed={self.seeds[0]}) failed: {exc}")
                return traces
            if again != traces[self.seeds[0]][0][0]:
                self.fail(
                    "deterministic",
                    f"reset(seed={self.seeds[0]}) twice in one process gave different "
                    "observations; reset must restore the whole state from the seed",
                )
            return traces

    async def phase_determinism(self, traces: dict[int, Trace]) -> None:
        env = await self.open()
        if env is None:
            return
        async with env:
            for seed, expected in traces.items():
                if await self.trace(env, seed) != expected:
                    self.fail(
                        "deterministic",
                        f"seed {seed} gave different observations or rewards in a fresh "
                        "process; draw randomness only from self.rng / random.Random(seed)",
                    )
                    return
        self.passed("deterministic")

    def phase_latency(self) -> None:
        if len(self.over_budget) < OVER_BUDGET_CALLS:
            self.passed("latency")

    async def phase_solution(self) -> None:
        if not self.has_solution:
            return
        wins = True
        for seed in self.seeds:
            env = await self.open()
            if env is None:
                return
            async with env:
                wins = await self.play_solution(env, seed) and wins
        self.solution_wins = wins
        if wins:
            self.passed("solution")

    async def play_solution(self, env: EnvSession, seed: int) -> bool:
        try:
            await env.reset(seed)
            actions = await env.solution() or []
            for turn, action in enumerate(actions[: self.max_turns], start=1):
                result = await env.step(action)
                if result.terminated or result.truncated:
                    if result.terminated and abs(result.reward - WIN_REWARD) <= 1e-6:
                        return True
                    self.fail(
                        "solution",
                        f"solution() for seed {seed} does not win: the episode ended after "
                        f"{turn} step(s) with reward {result.reward!r}",
                    )
                    return False
        except SandboxError as exc:
            self.fail("solution", f"playing solution() for seed {seed} failed: {exc}")
            return False
        self.fail(
            "solution",
            f"solution() for seed {seed} ({len(actions)} actions) did not end the episode "
            f"with a win within {self.max_turns} turns",
        )
        return False


ADMISSION_TURN_LIMIT = 24
"""Invalid actions within which a candidate must end an episode by itself. Generous on
purpose: the runner truncates play at ``selfplay.max_turns`` anyway; this only rejects
environments that never end."""


def draw_seeds(rng: random.Random, n: int = 2) -> tuple[int, ...]:
    """``n`` distinct seeds from the range play seeds come from."""
    seeds: list[int] = []
    while len(seeds) < n:
        seed = rng.randrange(PLAY_SEEDS)
        if seed not in seeds:
            seeds.append(seed)
    return tuple(seeds)


async def validate_source(
    pool: EnvPool,
    source: str,
    *,
    max_turns: int = ADMISSION_TURN_LIMIT,
    seeds: tuple[int, ...] | None = None,
    domain: str = "games",
    rng: random.Random | None = None,
) -> ValidationResult:
    """Run every admission check on ``source`` in sandbox children; never raises for bad code
    (cancellation still propagates).

    ``rng`` draws the seeds (unless ``seeds`` are given) and the probe actions of this check;
    pass the run's admission RNG (a fresh unpredictable one by default).
    ``domain = "tool_use"`` replaces the solution check with the tool-use checks
    (``validate_tool_use``: schemas, state determinism, instructions unmet at reset and reachable).
    """
    rng = rng if rng is not None else random.Random(secrets.randbits(64))
    validator = _Validator(pool, source, max_turns, seeds or draw_seeds(rng), rng, domain)
    size = len(source.encode("utf-8", "surrogatepass")) if isinstance(source, str) else -1
    if size <= 0 or size > pool.cfg.max_source_bytes:
        validator.fail(
            "size", f"the source is {size} bytes; it must be non-empty and at most {pool.cfg.max_source_bytes} bytes"
        )
        return validator.result()
    validator.passed("size")
    try:
        await _run_phases(validator, domain)
    except Exception as exc:
        log.warning("admission check failed internally: %r", exc)
        validator.fail(
            "internal", f"the check itself failed on this code ({type(exc).__name__}); treated as a rejection"
        )
    return validator.result()


async def _run_phases(validator: _Validator, domain: str = "games") -> None:
    if not await validator.phase_static():
        return
    traces = await validator.phase_traces()
    if traces and len(traces) == len(validator.seeds):
        await validator.phase_determinism(traces)
    validator.phase_latency()
    if validator.checks.get("loads") and domain == "tool_use":
        verdict = await check_tool_use(validator.pool, validator.source, validator.seeds, validator.max_turns)
        verdict.apply(validator.fail, validator.passed)
        validator.has_solution, validator.solution_wins = verdict.has_solution, verdict.solution_wins
    elif validator.checks.get("loads"):
        await validator.phase_solution()
