"""Dishonest environments do not pass admission, or do not survive play (issue 22 class 3).

An environment that tells admission from play by its seeds, by its first probe action or by
the timing of the calls behaves while it is checked and lets any action win afterwards. The
positive controls show each one cheating when it is played as it would be after the old,
predictable admission; every test ends with the pool serving a benign env."""

from __future__ import annotations

import random

import pytest

from spade_async.admission.audit import audit_play
from spade_async.admission.validate import GARBAGE_ACTIONS, PLAY_SEEDS, draw_seeds, validate_source
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import TEST_CFG, assert_serves, benign, hostile

pytestmark = pytest.mark.anyio


async def _play_once(pool: SandboxPool, name: str, seed: int, action: str) -> tuple[float, bool]:
    async with await pool.open(hostile(name)) as env:
        await env.reset(seed)
        result = await env.step(action)
    return result.reward, result.terminated


async def test_an_env_that_reads_the_seed_is_rejected(pool: SandboxPool) -> None:
    assert await _play_once(pool, "dishonest_seeds", 0, "\\boxed{anything}") == (0.0, False)  # behaves on seed 0 ...
    assert await _play_once(pool, "dishonest_seeds", 987_654_321, "\\boxed{anything}") == (1.0, True)  # ... not after
    verdict = await validate_source(pool, hostile("dishonest_seeds"), max_turns=8, rng=random.Random(1))
    assert not verdict.admitted and verdict.checks["meaningless_loses"] is False, verdict.reasons
    assert any("meaningless action" in r for r in verdict.reasons), verdict.reasons
    await assert_serves(pool)


async def test_an_env_that_reads_the_first_probe_is_rejected(pool: SandboxPool) -> None:
    assert await _play_once(pool, "dishonest_probe", 5, GARBAGE_ACTIONS[0]) == (0.0, False)  # the old first probe
    assert await _play_once(pool, "dishonest_probe", 5, "\\boxed{left}") == (1.0, True)  # what an agent sends
    verdict = await validate_source(pool, hostile("dishonest_probe"), max_turns=8, rng=random.Random(2))
    assert not verdict.admitted and verdict.checks["meaningless_loses"] is False, verdict.reasons
    await assert_serves(pool)


def test_seeds_and_probes_are_drawn_per_check() -> None:
    rng = random.Random(3)
    first, second = draw_seeds(rng), draw_seeds(rng)
    assert first != second and len(set(first)) == 2
    assert all(0 <= s < PLAY_SEEDS for s in first + second) and max(first + second) > 1_000_000


async def test_an_env_that_reads_the_timing_fails_the_play_audit(pool: SandboxPool) -> None:
    source = hostile("dishonest_timing")
    verdict = await validate_source(pool, source, max_turns=8, rng=random.Random(4))
    assert verdict.admitted, verdict.reasons  # back-to-back checks cannot see it ...
    assert verdict.promise is not None and verdict.promise.actions[0].startswith("\\boxed{")
    reason = await audit_play(pool, source, verdict.promise, rng=random.Random(5), pace_s=0.8)
    assert reason is not None and "won in play" in reason, reason  # ... an audit paced like play does
    assert await audit_play(pool, source, verdict.promise, rng=random.Random(5), pace_s=0.0) is None  # control
    await assert_serves(pool)


async def test_the_audit_passes_honest_envs_and_sees_departures(pool: SandboxPool) -> None:
    honest = benign()
    verdict = await validate_source(pool, honest, max_turns=8, rng=random.Random(6))
    assert verdict.admitted and verdict.promise is not None, verdict.reasons
    assert await audit_play(pool, honest, verdict.promise, rng=random.Random(7), pace_s=0.05) is None
    assert await audit_play(pool, honest, None, rng=random.Random(8)) is None  # no promise: a fresh seed
    other = verdict.promise.__class__(
        verdict.promise.seed,
        verdict.promise.actions,
        (("another first observation", 0.0, False, False), *verdict.promise.answers[1:]),
    )
    reason = await audit_play(pool, honest, other, rng=random.Random(9))
    assert reason is not None and "another observation than at admission" in reason
    await assert_serves(pool)


async def test_an_env_that_spends_most_of_the_timeout_is_rejected(pool: SandboxPool) -> None:
    slow = hostile("slow_calls")
    async with await pool.open(slow) as env:  # positive control: every call answers within the timeout
        await env.reset(0)
        assert (await env.step("\\boxed{amber}")).obs in ("Right!", "No.")
    assert TEST_CFG.admission_call_budget_s < 0.35 < TEST_CFG.call_timeout_s
    verdict = await validate_source(pool, slow, max_turns=8, rng=random.Random(10))
    assert not verdict.admitted and verdict.checks["latency"] is False, verdict.reasons
    assert any("budget per call" in r for r in verdict.reasons), verdict.reasons
    await assert_serves(pool)
