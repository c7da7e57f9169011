"""Admission: benign envs are admitted; each kind of broken env is rejected with a reason."""

from __future__ import annotations

import re

import pytest

from spade_async.admission.validate import validate_source
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import benign, hostile

pytestmark = pytest.mark.anyio

BASE = """class E(GameEnv):
    def _reset(self):
        self.n = self.rng.randint(0, 9)
        return f"n={self.n}", {}

    def _step(self, action):
        STEP
"""


def env_with(step: str, extra: str = "") -> str:
    return extra + BASE.replace("STEP", step)


@pytest.mark.parametrize("name", ["guess", "maze"])
async def test_benign_envs_are_admitted(pool: SandboxPool, name: str) -> None:
    result = await validate_source(pool, benign(name), max_turns=8)
    assert result.admitted, result.reasons
    assert result.reasons == [] and result.has_solution and result.solution_wins is True
    assert result.class_name in ("GuessNumber", "GridWalk")


@pytest.mark.parametrize(
    ("source", "check", "reason"),
    [
        (env_with("return 'x', 2.0, True, False, {}"), "reward_range", "must lie in \\[0, 1\\]"),
        (env_with("raise KeyError(action)"), "garbage", "not raise"),
        (env_with("return 'x', 0.0, False, False, {}"), "ends", "did not end within 8 turns"),
        (env_with("return 'x', 0.0, True, False"), "step", "invalid result"),
        (env_with("return str(time.time()), 0.0, True, False, {}", "import time\n"), "deterministic", "different"),
        (env_with("return 'x', 0.0, True, False, {}", "import os\n"), "imports", "imports os"),
        (
            env_with("return 'x', 0.0, True, False, {}").replace("self.rng.randint(0, 9)", "random.randint(0, 10**9)"),
            "deterministic",
            "different",
        ),
        (
            env_with("return 'x', 0.0, True, False, {}") + "    def solution(self):\n        return ['nope']\n",
            "solution",
            "does not win",
        ),
        (hostile("import_hang"), "loads", "longer than"),
        (hostile("syntax_error"), "loads", "SyntaxError at line 6"),
        ("", "size", "non-empty"),
    ],
    ids=[
        "reward_range",
        "crash_on_garbage",
        "never_ends",
        "four_tuple",
        "time_based",
        "import_os",
        "global_random",
        "losing_solution",
        "import_hang",
        "syntax_error",
        "empty",
    ],
)
async def test_broken_envs_are_rejected(pool: SandboxPool, source: str, check: str, reason: str) -> None:
    result = await validate_source(pool, source, max_turns=8)
    assert not result.admitted
    assert result.checks.get(check) is False, result.checks
    assert any(re.search(reason, r) for r in result.reasons), result.reasons
