"""The pool API with benign envs: loading, calls, solution, errors with readable messages,
the max_children bound, closing, and the isolation probe."""

from __future__ import annotations

import time

import anyio
import pytest

from spade_async.config import SandboxConfig
from spade_async.sandbox.errors import EnvCrashed, EnvProtocolError, IsolationTooLow, SandboxError
from spade_async.sandbox.pool import SandboxPool, StepResult
from tests.sandbox.conftest import TEST_CFG, alive, benign

pytestmark = pytest.mark.anyio


async def test_benign_env_round_trip(pool: SandboxPool) -> None:
    async with await pool.open(benign("maze")) as env:
        assert env.class_name == "GridWalk" and env.has_solution
        obs, info = await env.reset(3)
        assert "A" in obs and info == {"size": 4}
        actions = await env.solution()
        assert actions
        for action in actions:
            result = await env.step(action)
        assert isinstance(result, StepResult) and result.terminated and result.reward == 1.0
        pid = env.pid
    assert not alive(pid)


async def test_inspect_reports_static_facts_without_running(pool: SandboxPool) -> None:
    facts = await pool.inspect(benign("maze"))
    assert set(facts["imports"]) == {"random", "dataclasses"} and "GridWalk" in facts["classes"]
    assert facts["dynamic"] == []
    # a source that would exit at import time is only parsed: the facts still come back
    facts = await pool.inspect("import os\nos._exit(3)\nHINT = 'go left'\nclass E:\n    pass\n")
    assert facts["imports"] == ["os"] and facts["classes"] == ["E"] and facts["strings"] == {"HINT": "go left"}
    assert "SyntaxError at line 1" in (await pool.inspect("def f(:\n"))["syntax_error"]


async def test_solution_is_none_without_method(pool: SandboxPool) -> None:
    source = "class E:\n    def reset(self, seed=None):\n        return 'o', {}\n    def step(self, a):\n        print('hi')\n        return 'o', 0.5, False, False, {'k': [1, 2]}\n"
    async with await pool.open(source) as env:
        assert await env.solution() is None
        await env.reset()
        result = await env.step("a")
        assert (result.reward, result.info, result.output) == (0.5, {"k": [1, 2]}, "hi\n")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x = 1\n", "no class with reset\\(\\) and step\\(\\)"),
        (
            "class A:\n    def reset(self): pass\n    def step(self, a): pass\nclass B(GameEnv):\n    pass\n",
            "found 2 env classes",
        ),
        ("class A(GameEnv):\n    def __init__(self, n):\n        pass\n", "could not create A\\(\\)"),
        ("def f(:\n", "SyntaxError at line 1"),
    ],
)
async def test_load_errors_are_readable(pool: SandboxPool, source: str, message: str) -> None:
    with pytest.raises((EnvCrashed, EnvProtocolError), match=message):
        await pool.open(source)
    assert pool.live == 0


async def test_env_exception_reports_line(pool: SandboxPool) -> None:
    source = "class E(GameEnv):\n    def _reset(self):\n        return 'o', {}\n    def _step(self, a):\n        return 1 / 0\n"
    env = await pool.open(source)
    await env.reset(0)
    with pytest.raises(EnvCrashed, match="ZeroDivisionError: division by zero \\(line 5: return 1 / 0\\)"):
        await env.step("x")
    with pytest.raises(EnvCrashed, match="unusable"):
        await env.reset(0)
    await env.aclose()
    await env.aclose()  # idempotent


async def test_max_children_bounds_live_envs() -> None:
    cfg = SandboxConfig(max_children=2, min_isolation="full")
    async with await SandboxPool.start(cfg) as pool:
        first, second = await pool.open(benign()), await pool.open(benign())
        opened_at: list[float] = []

        async def third() -> None:
            async with await pool.open(benign()):
                opened_at.append(time.monotonic())

        async with anyio.create_task_group() as tg:
            tg.start_soon(third)
            await anyio.sleep(0.2)
            assert opened_at == [] and pool.live == 2
            released = time.monotonic()
            await first.aclose()
        assert opened_at and opened_at[0] >= released
        await second.aclose()
        assert pool.live == 0


async def test_concurrent_envs(pool: SandboxPool) -> None:
    results: list[float] = []

    async def play(seed: int) -> None:
        async with await pool.open(benign("maze")) as env:
            await env.reset(seed)
            for action in await env.solution() or []:
                result = await env.step(action)
            results.append(result.reward)

    async with anyio.create_task_group() as tg:
        for seed in range(TEST_CFG.max_children):
            tg.start_soon(play, seed)
    assert results == [1.0] * TEST_CFG.max_children


async def test_cancellation_kills_the_child(pool: SandboxPool) -> None:
    from tests.sandbox.conftest import hostile

    env = await pool.open(hostile("sleep"))
    await env.reset(0)
    with anyio.move_on_after(0.1):
        await env.step("go")
    assert not alive(env.pid) and pool.live == 0


async def test_probe_reports_full_isolation_here(pool: SandboxPool) -> None:
    report = pool.isolation
    assert report.level == "full", report.as_dict()
    assert report.missing == [] or set(report.missing) <= {"namespaces"}
    assert all(report.checks.values()), report.checks
    assert report.as_dict()["level"] == "full"


@pytest.mark.parametrize(
    ("disabled", "level", "missing"),
    [
        ("seccomp", "rlimits", "seccomp"),
        ("landlock", "seccomp", "landlock"),
        ("uid", "landlock", "uid"),
    ],
)
async def test_below_min_isolation_refuses(disabled: str, level: str, missing: str) -> None:
    with pytest.raises(IsolationTooLow, match=f"is '{level}'.*missing layer\\(s\\): {missing} "):
        await SandboxPool.start(SandboxConfig(min_isolation="full"), disable=frozenset({disabled}))


async def test_lower_minimum_runs_with_fewer_layers() -> None:
    cfg = SandboxConfig(min_isolation="rlimits")
    async with await SandboxPool.start(cfg, disable=frozenset({"seccomp", "namespaces"})) as pool:
        assert pool.isolation.level == "rlimits"
        assert "seccomp" in pool.isolation.missing and "namespaces" in pool.isolation.missing
        async with await pool.open(benign()) as env:
            assert (await env.reset(0))[0].startswith("Guess")


async def test_oversized_or_non_text_source_is_refused_before_a_child_is_spent(pool: SandboxPool) -> None:
    with pytest.raises(SandboxError, match="above the"):
        await pool.open("#" * (pool.cfg.max_source_bytes + 1))
    with pytest.raises(SandboxError, match="must be a str"):
        await pool.inspect(b"class E: pass")  # type: ignore[arg-type]
