"""Designer credit through the real pipeline (scripted engine and learner, real sandbox and SQLite).

Each test breaks if one wire of the credit path is cut: a copy of memory is rewarded, an
exact duplicate of the same generation is admitted twice, a sample is stamped with the
wrong temperature, a hinted play is trained on, or an errored play is forgotten.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.engine.base import Completion
from spade_async.learner.samples import TrainSample
from spade_async.memory.records import EnvRecord
from spade_async.run.assemble import open_run
from spade_async.selfplay.curriculum import LiveEnv
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import Design, DesignJob
from spade_async.selfplay.design.novelty import code_key
from spade_async.selfplay.play.agent import Episode
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import coin_variant, heads_if_hinted, make_config

pytestmark = pytest.mark.anyio


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def designer_samples(engine: ScriptedEngine, learner: ScriptedLearner) -> list[tuple[str, TrainSample]]:
    """(trained text, sample) of every designer sample the learner saw."""
    out = []
    for batch in learner.batches:
        for s in batch:
            if s.role == "designer":
                out.append((engine.decode([t for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m]), s))
    return out


async def run_designs(
    tmp_path: Path,
    designs: list[str],
    edit: Callable[[Config], None] | None = None,
) -> tuple[ScriptedEngine, ScriptedLearner, Path]:
    """Two designs per generation (one skill, so they are centred together), 4 steps, k = 2."""
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
    if edit is not None:
        edit(cfg)
    cycle = itertools.cycle(designs)
    engine = ScriptedEngine(
        policies={"designer": lambda prompt, rng: f"```python\n{next(cycle)}```", "agent": heads_if_hinted}
    )
    learner = ScriptedLearner()
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    return engine, learner, tmp_path / "run" / "run.sqlite"


async def test_a_copy_of_memory_earns_the_invalid_penalty_and_leaves_the_original_alone(tmp_path: Path) -> None:
    # The seed pool holds COIN_ENV; one design per generation resubmits it verbatim. Fresh designs
    # shown no example: the copy is of memory, not of code shown in its prompt.
    def unshown(cfg: Config) -> None:
        cfg.selfplay.mutation_fraction = 0.0
        cfg.memory.examples_shown = 0

    engine, learner, db = await run_designs(tmp_path, [COIN_ENV, coin_variant(1), COIN_ENV, coin_variant(2)], unshown)
    scored = designer_samples(engine, learner)
    copies = [s for text, s in scored if "(variant" not in text]
    new = [s for text, s in scored if "(variant" in text]
    assert copies and new
    assert all(s.reward < 0 for s in copies) and all(s.reward > 0 for s in new)
    assert all(s.meta["env_id"] is None for s in copies)  # never became a live environment
    events = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'rejected'")]
    assert any("copy of an environment already in memory" in m for m in events)
    # The original (the seed) keeps its row: not overwritten as an invalid design, no reward.
    seed = rows(db, "SELECT origin, valid, status, designer_reward FROM environments WHERE code = ?", (COIN_ENV,))
    assert seed == [("seed", 1, "retired", None)]
    assert sum(code_key(code) == code_key(COIN_ENV) for (code,) in rows(db, "SELECT code FROM environments")) == 1
    # Near-copies are new environments: each variant was admitted, played and stored.
    stored = rows(db, "SELECT valid, n_plays FROM environments WHERE code LIKE '%(variant%'")
    assert len(stored) == 2 and all(v == 1 and n > 0 for v, n in stored)


async def test_the_last_generation_is_scored_when_the_run_ends(tmp_path: Path) -> None:
    engine, learner, db = await run_designs(tmp_path, [coin_variant(n) for n in range(1, 5)])
    # Generation 1 (steps 2-3) retires with the run: stored, not trained (no learner step follows).
    last = rows(db, "SELECT status, designer_reward FROM environments WHERE created_step = 2 AND origin != 'seed'")
    assert len(last) == 2 and all(status == "retired" and reward is not None for status, reward in last)
    assert sum(r for _, r in last) == pytest.approx(0.0)  # centred over the generation's one skill
    trained = {text for text, _ in designer_samples(engine, learner)}
    assert not any("(variant 3)" in t or "(variant 4)" in t for t in trained)
    events = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'info'")]
    assert any("scored the last generation's 2 designs at the end of the run" in m for m in events)


async def test_a_same_generation_duplicate_is_played_once_and_scored_invalid(tmp_path: Path) -> None:
    # Generation 0: the same new game twice. Generation 1: two different new games.
    engine, learner, db = await run_designs(
        tmp_path, [coin_variant(1), coin_variant(1), coin_variant(2), coin_variant(3)]
    )
    first_gen = [(text, s) for text, s in designer_samples(engine, learner) if "(variant 1)" in text]
    assert len(first_gen) == 2
    kept = [s for _, s in first_gen if s.meta["env_id"] is not None]
    dropped = [s for _, s in first_gen if s.meta["env_id"] is None]
    assert len(kept) == 1 and len(dropped) == 1
    assert kept[0].reward > 0 > dropped[0].reward
    events = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'rejected'")]
    assert any("duplicate of an environment already live this generation" in m for m in events)
    # Played as one live environment: 8 plain plays per step, not 16.
    (env_id,) = {s.meta["env_id"] for s in kept}
    per_step = rows(db, "SELECT step, count(*) FROM episodes WHERE env_id = ? AND hinted = 0 GROUP BY step", (env_id,))
    assert per_step == [(0, 8), (1, 8)]


async def test_samples_carry_their_roles_temperature_and_hinted_plays_are_not_trained(tmp_path: Path) -> None:
    def temperatures(cfg: Config) -> None:
        cfg.engine.agent.temperature = 0.7
        cfg.engine.designer.temperature = 0.6

    engine, learner, db = await run_designs(tmp_path, [coin_variant(n) for n in range(1, 5)], edit=temperatures)
    samples = [s for batch in learner.batches for s in batch]
    agent = [s for s in samples if s.role == "agent"]
    designer = [s for s in samples if s.role == "designer"]
    assert agent and designer
    assert {s.temperature for s in agent} == {0.7}
    assert {s.temperature for s in designer} == {0.6}
    # Hinted plays happened and their outcomes vary (so a GRPO group of them would be trained on)...
    hinted = rows(db, "SELECT DISTINCT outcome FROM episodes WHERE hinted = 1")
    assert len(hinted) == 2
    # ...but no trained agent sample saw a hint.
    assert not any("Hint from the game's designer" in engine.decode(s.input_ids) for s in agent)


def fake_design(skill: str = "Pattern Recognition") -> Design:
    job = DesignJob(skill, Document("d", "t", "x"), "fresh")
    return Design(
        job=job,
        prompt_ids=[1, 2],
        completion=Completion([1, 2], [3, 4], [-0.1, -0.1], "x", "stop", 0),
        code=COIN_ENV,
        hint="h",
        admitted=True,
    )


def episode(env_id: str, outcome: float, *, error: str | None = None) -> Episode:
    return Episode(
        env_id=env_id,
        hinted=False,
        seed=0,
        outcome=outcome,
        turns=1,
        truncated=False,
        transcript=[],
        input_ids=[1, 2, 3],
        loss_mask=[0, 1, 1],
        behaviour_logprobs=[0.0, -0.1, -0.1],
        error=error,
    )


async def test_errored_plays_count_against_the_design(tmp_path: Path) -> None:
    # 7 of 10 plays crash: above max_play_error_share (0.25) the design is scored invalid,
    # not on its 3 surviving plays. The orchestrator must record each error.
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1)
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        live = []
        for code in (coin_variant(1), coin_variant(2)):
            env_id = await pipeline.store.record_environment(
                EnvRecord(
                    code=code, domain="games", skill="Pattern Recognition", origin="fresh", created_step=0, hint="h"
                )
            )
            live.append(LiveEnv(env_id, code, "h", "Pattern Recognition", "fresh", 0, design=fake_design()))
        good, crashy = live
        pipeline.curriculum.live = live
        played = [(good, episode(good.env_id, float(i % 2))) for i in range(10)]
        played += [(crashy, episode(crashy.env_id, float(i % 2), error="crash" if i < 7 else None)) for i in range(10)]
        _, metrics = await pipeline._score_plays(0, played)
        retired = pipeline.curriculum.retire()
    assert metrics["episodes_failed"] == 7.0
    verdict = {s.env_id: s for s in retired.scored}
    why = verdict[crashy.env_id].why_invalid
    assert why is not None and "70%" in why
    assert not verdict[crashy.env_id].candidate.valid and verdict[good.env_id].candidate.valid
    assert retired.designer_rewards[crashy.env_id] < 0 < retired.designer_rewards[good.env_id]
