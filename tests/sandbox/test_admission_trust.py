"""Admission must not trust the code under test (issue class 9): a candidate that imports
ctypes/socket/subprocess and answers the protocol itself (a forged load reply, a winning
solution) is rejected, because the import list comes from a child that only parsed it."""

from __future__ import annotations

import pytest

from spade_async.admission.validate import validate_source
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import assert_serves, hostile

pytestmark = pytest.mark.anyio


async def test_protocol_hijacker_is_rejected_on_its_imports(pool: SandboxPool) -> None:
    source = hostile("protocol_hijack")
    async with await pool.open(source) as env:  # positive control: the loaded child lies for itself
        assert env.class_name == "Innocent"
        obs, _ = await env.reset(0)
        result = await env.step("anything")
        assert (obs, result.reward, result.terminated) == ("a fair game", 1.0, True)
    verdict = await validate_source(pool, source, max_turns=4)
    assert not verdict.admitted and verdict.checks["imports"] is False
    assert any("imports ctypes, os, socket, stat, subprocess" in r for r in verdict.reasons), verdict.reasons
    await assert_serves(pool)


async def test_dynamic_imports_are_rejected(pool: SandboxPool) -> None:
    source = (
        "class E(GameEnv):\n    def _reset(self):\n        return __import__('os').getcwd(), {}\n"
        "    def _step(self, action):\n        return 'x', 0.0, True, False, {}\n"
    )
    verdict = await validate_source(pool, source, max_turns=4)
    assert not verdict.admitted and any("__import__" in r for r in verdict.reasons), verdict.reasons
    await assert_serves(pool)


def test_validate_never_parses_in_the_trainer() -> None:
    import ast
    import inspect

    from spade_async.admission import validate
    from spade_async.sandbox import pool as pool_module

    for module in (validate, pool_module):
        tree = ast.parse(inspect.getsource(module))
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        names = {
            node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        assert "parse" not in calls and not {"compile", "exec", "eval"} & names, module.__name__


async def test_hint_constant_comes_from_the_inspecting_child(pool: SandboxPool) -> None:
    """The designer's HINT/SKILL constants are read by the child that only parses the code;
    the code runs nowhere before that, and a candidate cannot forge them by running."""
    from spade_async.envs.seeds import load_seeds

    seed = next(s for s in load_seeds("easy") if s.hint)
    verdict = await validate_source(pool, seed.source, max_turns=12)
    assert verdict.admitted, verdict.reasons
    assert verdict.constants["HINT"] == seed.hint and verdict.constants["SKILL"] == seed.skill
    annotated = "HINT: str = 'go left'\nA = B = 'both'\nN = 3\nclass E:\n    pass\n"
    facts = await pool.inspect(annotated)
    assert facts["strings"] == {"HINT": "go left", "A": "both", "B": "both"}
