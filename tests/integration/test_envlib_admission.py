"""Every library file passes the admission a design passes: the real validator in real sandbox
children, with the turn limit of the presets (``selfplay.max_turns = 10``).

Why here and not only in the generator: the library teaches the designer what an admissible
file is, so a file that the run would reject must fail CI. A broken copy of a library file is
rejected by the same call (the check can fail).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import anyio
import pytest

from spade_async.admission.validate import validate_source
from spade_async.config import SandboxConfig
from spade_async.envlib import load_envlib
from spade_async.sandbox.pool import SandboxPool

pytestmark = pytest.mark.anyio
MAX_TURNS = 10
CONCURRENT = 4


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def pool(anyio_backend: str) -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0, max_children=2 * CONCURRENT)) as started:
        yield started


async def test_every_library_file_is_admitted(pool: SandboxPool) -> None:
    files = load_envlib()
    rejected: dict[str, list[str]] = {}
    limiter = anyio.Semaphore(CONCURRENT)

    async def admit(index: int, name: str, code: str) -> None:
        async with limiter:
            verdict = await validate_source(pool, code, max_turns=MAX_TURNS, rng=random.Random(index))
        if not verdict.admitted or verdict.solution_wins is not True:
            rejected[name] = verdict.reasons

    async with anyio.create_task_group() as group:
        for index, f in enumerate(files):
            group.start_soon(admit, index, f.name, f.code)
    assert not rejected, rejected
    assert len(files) >= 200


async def test_a_broken_library_file_is_rejected(pool: SandboxPool) -> None:
    code = load_envlib()[0].code
    broken = code.replace("def solution(self):\n        return", "def solution(self):\n        return ['xyzzy'] or", 1)
    assert broken != code
    verdict = await validate_source(pool, broken, max_turns=MAX_TURNS, rng=random.Random(0))
    assert not verdict.admitted and verdict.checks.get("solution") is False, verdict.reasons
