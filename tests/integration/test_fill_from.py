"""Where a generation's empty places are filled from (``selfplay.fill_from``): with `memory` the
run's past designs come back as fillers beside the seeds; with `seeds` only the seed games do,
so the games the agent is evaluated on keep their share of its plays. Checked in the store the
run wrote (which environments were played at which step), through the real generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, heads_if_hinted, make_config, rows

pytestmark = pytest.mark.anyio


async def refilled_designs(tmp_path: Path, fill_from: str) -> tuple[int, list[str]]:
    """Plays of past designs brought back as fillers (played two or more steps after the
    generation that made them), and the console's fill lines."""
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, fill_from=fill_from)
    cfg.run.max_steps = 8  # generations at steps 1, 3, 5, 7: one design admitted, one place filled each
    lines: list[str] = []
    engine = ScriptedEngine(policies={"designer": alternating_designer(), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lines.append) as pipeline:
        assert await pipeline.run(sync=True) == 8
    (refilled,) = rows(
        tmp_path / "run" / "run.sqlite",
        "SELECT COUNT(*) FROM episodes e JOIN environments v ON v.id = e.env_id "
        f"WHERE v.origin != 'seed' AND e.step - v.created_step >= {cfg.selfplay.regen_every}",
    )[0]
    return refilled, [ln for ln in lines if "fill the live pool" in ln]


async def test_memory_fill_brings_past_designs_back(tmp_path: Path) -> None:
    refilled, lines = await refilled_designs(tmp_path, "memory")
    assert refilled > 0  # one seed and up to three past designs to draw each filler from
    assert lines and all("from memory (seed games or past designs)" in ln for ln in lines)


async def test_seed_fill_plays_only_seed_games_in_the_empty_places(tmp_path: Path) -> None:
    refilled, lines = await refilled_designs(tmp_path, "seeds")
    assert refilled == 0
    assert len(lines) == 4 and all("1 environment(s) from the seed games fill the live pool" in ln for ln in lines)
