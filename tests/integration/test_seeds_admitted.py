"""Every seed environment passes the sandbox's admission checks (what the designer must meet)."""

from __future__ import annotations

import pytest

from spade_async.admission.validate import validate_source
from spade_async.config import SandboxConfig
from spade_async.envs.seeds import load_seeds
from spade_async.sandbox.pool import SandboxPool

pytestmark = pytest.mark.anyio


async def test_every_seed_is_admitted() -> None:
    async with await SandboxPool.start(SandboxConfig()) as pool:
        for seed in load_seeds("all"):
            verdict = await validate_source(pool, seed.source)
            assert verdict.admitted, (seed.name, verdict.reasons)
            assert verdict.solution_wins, seed.name
