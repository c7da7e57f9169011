"""Where a generation's empty places are filled from (``selfplay.fill_from``): with `memory` the
run's past designs come back as fillers beside the seeds; with `seeds` only the seed games do,
the least played first, so the games the agent is evaluated on keep their share of its plays
and each takes its turn. Checked in the store the run wrote (which environments were played at
which step), through the real generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, heads_if_hinted, make_config, rows

pytestmark = pytest.mark.anyio


async def refilled_designs(
    tmp_path: Path, fill_from: str, *, seeds: int = 1, steps: int = 8, run_seed: int = 0
) -> tuple[int, list[str]]:
    """Plays of past designs brought back as fillers (played two or more steps after the
    generation that made them), and the console's fill lines; ``seeds`` coin games in the pool."""
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, fill_from=fill_from)
    for n in range(2, seeds + 1):
        (tmp_path / "pool" / f"coin{n}.py").write_text(COIN_ENV.replace("coin flip.", f"coin flip (seed {n})."))
    cfg.run.seed = run_seed
    cfg.run.max_steps = steps  # a generation every 2 steps: one design admitted, one place filled each
    lines: list[str] = []
    engine = ScriptedEngine(policies={"designer": alternating_designer(), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lines.append) as pipeline:
        assert await pipeline.run(sync=True) == steps
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


async def test_seed_fill_takes_the_least_played_seed_first(tmp_path: Path) -> None:
    """Three seed games, one empty place in each of six generations: every game fills two of
    them, and the first three are three different games (a random draw from the curriculum's
    RNG, with this run seed, fills four with one game, two with another, none with the third)."""
    refilled, _ = await refilled_designs(tmp_path, "seeds", seeds=3, steps=12, run_seed=2)
    assert refilled == 0
    fills = rows(
        tmp_path / "run" / "run.sqlite",
        "SELECT e.step, e.env_id FROM episodes e JOIN environments v ON v.id = e.env_id "
        "WHERE v.origin = 'seed' AND e.hinted = 0 AND e.step % 2 = 0 GROUP BY e.step, e.env_id ORDER BY e.step",
    )
    order = [env for _, env in fills]
    assert len(order) == 6 and len(set(order[:3])) == 3, fills
    assert sorted(order.count(env) for env in set(order)) == [2, 2, 2], fills
