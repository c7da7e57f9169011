"""The orchestrator end to end with a scripted engine and learner (real sandbox, real SQLite).

The scripted policy designs a weighted-coin game (admitted) or broken code (rejected), and
plays it by calling heads when the hint says so, else guessing: so hint regret is real and
positive, GRPO groups have variance, and the designer's delayed samples can be checked.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.run.assemble import open_run
from spade_async.run.pipeline import Pipeline
from spade_async.testing import BROKEN_ENV, COIN_ENV, ScriptedEngine, ScriptedLearner

pytestmark = pytest.mark.anyio


def make_config(tmp_path: Path, **selfplay: object) -> Config:
    pool = tmp_path / "pool"
    pool.mkdir(exist_ok=True)
    (pool / "coin.py").write_text(COIN_ENV)
    sp = {
        "envs_per_step": 2,
        "plays": 8,
        "hinted_plays": 8,
        "regen_every": 2,
        "skills_per_regen": 2,
        "max_turns": 3,
        "max_off_policy_steps": 1,
        "fixed_pool": str(pool),
    }
    sp.update(selfplay)
    return Config.model_validate(
        {
            "run": {
                "run_dir": str(tmp_path / "run"),
                "max_steps": 4,
                "checkpoint_every": 2,
                "device": "cpu",
                "keep_adapters": 2,
            },
            "selfplay": sp,
            "memory": {"examples_shown": 1, "embed_model": "hashing"},
            "sandbox": {"call_timeout_s": 2.0, "max_children": 32},
            "engine": {"agent": {"max_new_tokens": 64}, "designer": {"max_new_tokens": 4096}},
        }
    )


def coin_variant(n: int) -> str:
    """The coin game with its description numbered: a near-copy, new code each time (a verbatim
    resubmission would copy memory and earn the invalid penalty, see test_design_credit.py)."""
    return COIN_ENV.replace("Call a weighted coin flip.", f"Call a weighted coin flip (variant {n}).")


def alternating_designer():
    counter = itertools.count(1)
    designs = itertools.cycle(["coin", BROKEN_ENV])

    def policy(prompt: str, rng: object) -> str:
        design = next(designs)
        return f"```python\n{coin_variant(next(counter)) if design == 'coin' else design}```"

    return policy


def heads_if_hinted(prompt: str, rng: object) -> str:
    return "\\boxed{heads}" if "Always call heads" in prompt else "\\boxed{tails}"


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_spade_loop_designs_plays_scores_and_learns(tmp_path: Path) -> None:
    # One skill per generation: designer rewards are centred per skill, so both designs
    # must share one for the admitted design to score above the rejected one.
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
    # Deterministic plays (the coin's side is fixed by the episode seed): heads with the hint,
    # tails without, so the hinted arm wins on the 70% of seeds that land heads.
    engine = ScriptedEngine(policies={"designer": alternating_designer(), "agent": heads_if_hinted})
    learner = ScriptedLearner()
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        done = await pipeline.run(sync=True)
    assert done == 4
    db = tmp_path / "run" / "run.sqlite"
    # The coin game was admitted; the broken one rejected with a reason a person can act on.
    coin = rows(
        db,
        "SELECT valid, status, win_rate, hint_win_rate, regret FROM environments "
        "WHERE code LIKE '%WeightedCoin%' AND origin != 'seed'",
    )
    assert coin and coin[0][0] == 1
    broken = rows(db, "SELECT valid, reasons FROM environments WHERE code LIKE '%class Broken%'")
    assert broken and broken[0][0] == 0 and json.loads(broken[0][1])
    assert rows(db, "SELECT count(*) FROM events WHERE kind = 'rejected'")[0][0] >= 2
    # The hint really helps: hinted plays win more than plain ones, so regret > 0.
    _, _, w, w_hint, regret = coin[0]
    assert w_hint > w and regret > 0
    # 2 live envs (coin + a memory fill) x 8 plain plays every step; the 8 hinted plays
    # only at the step an environment goes live (steps 0 and 2, regen_every = 2).
    per_step = rows(db, "SELECT step, hinted, count(*) FROM episodes GROUP BY step, hinted")
    assert {(s, h, n) for s, h, n in per_step} == {(s, 0, 16) for s in range(4)} | {(0, 1, 16), (2, 1, 16)}
    # Designer samples arrive k = 2 steps late, from version 0: one per design (admitted and
    # rejected), and each design's reward lands on that design's own tokens.
    designer_batches = [b for b in learner.batches if any(s.role == "designer" for s in b)]
    assert designer_batches, "retired designs must produce designer samples"
    designer = [s for s in designer_batches[0] if s.role == "designer"]
    assert len(designer) == 2 and all(s.adapter_version == 0 for s in designer)
    text = {id(s): engine.decode([t for t, m in zip(s.input_ids, s.loss_mask, strict=True) if m]) for s in designer}
    coin_sample = next(s for s in designer if "class WeightedCoin" in text[id(s)])
    broken_sample = next(s for s in designer if "class Broken" in text[id(s)])
    assert coin_sample.reward > 0 > broken_sample.reward
    assert coin_sample.advantage == coin_sample.reward and broken_sample.advantage == broken_sample.reward
    coin_id = coin_sample.meta["env_id"]
    stored = rows(db, f"SELECT designer_reward, code FROM environments WHERE id = '{coin_id}'")
    assert "class WeightedCoin" in stored[0][1] and stored[0][0] == pytest.approx(coin_sample.reward)
    assert broken_sample.meta["env_id"] is None
    # Every step trained and made a new adapter live in the engine.
    steps = rows(db, "SELECT step, adapter_version, metrics FROM steps ORDER BY step")
    assert [s for s, _, _ in steps] == [0, 1, 2, 3]
    assert [v for _, v, _ in steps] == [1, 2, 3, 4]
    assert [v for v, _ in engine.loaded] == [1, 2, 3, 4]
    metrics = json.loads(steps[0][2])
    assert metrics["valid_fraction"] == 0.5 and metrics["regret_mean"] is not None
    assert 1.0 <= metrics["env_diversity"] <= 2.0  # Vendi score of the 2 live environments
    # Checkpoints at steps 1 and 3 (checkpoint_every = 2), recorded after the files exist.
    ckpts = rows(db, "SELECT step, path FROM checkpoints ORDER BY step")
    assert [s for s, _ in ckpts] == [1, 3]
    assert all((Path(p) / "state.json").is_file() for _, p in ckpts)
    # Adapters on disk: the newest keep_adapters = 2 (v3, v4) plus v2, the version the
    # checkpoint after step 2 was taken at; v1 is pruned.
    assert sorted(p.name for p in (tmp_path / "run" / "adapters").iterdir()) == ["v2", "v3", "v4"]


async def test_fixed_mode_plays_the_pool(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1)
    cfg.log.backends = ["jsonl"]
    engine = ScriptedEngine()
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    db = tmp_path / "run" / "run.sqlite"
    played = rows(db, "SELECT DISTINCT e.code FROM episodes p JOIN environments e ON e.id = p.env_id")
    assert len(played) == 1 and "WeightedCoin" in played[0][0]
    assert engine.calls > 0
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2, 3, 4] and all("plain_return_mean" in m for m in lines)


def overlapped(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


@pytest.mark.parametrize("sync", [True, False])
async def test_overlap_only_in_async_mode(tmp_path: Path, sync: bool) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=4, hinted_plays=0)
    engine = ScriptedEngine(latency_s=0.15)
    learner = ScriptedLearner(cost_s=0.3)
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        await pipeline.run(sync=sync)
    shared = overlapped(engine.busy_intervals, learner.intervals)
    if sync:
        assert shared == 0.0
    else:  # every step but the last trained while the next one was generated (no timing bound)
        assert len(learner.intervals) >= 2  # (a step whose groups all lack variance trains nothing)
        assert all(overlapped(engine.busy_intervals, [step]) > 0.0 for step in learner.intervals[:-1])
    # Staleness bound: every trained agent sample is at most one version behind.
    for version, batch in enumerate(learner.batches):
        assert all(version - s.adapter_version <= 1 for s in batch if s.role == "agent")


async def test_staleness_drops_are_counted_and_streams_stay_bounded(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=4, hinted_plays=0)
    cfg.run.max_steps = 6
    engine = ScriptedEngine(latency_s=0.0)
    learner = ScriptedLearner(cost_s=0.25)
    lead_seen: list[int] = []
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as pipeline:
        original = Pipeline.produce

        async def spy(self: Pipeline, step: int):
            lead_seen.append(step - len(learner.batches))
            return await original(self, step)

        pipeline.produce = spy.__get__(pipeline)  # type: ignore[method-assign]
        await pipeline.run(sync=False, lead=3)
        dropped = pipeline.stale_dropped
    # The producer ran ahead by at most `lead` (+1 for the batch being trained).
    assert max(lead_seen) <= 3 + 1
    assert dropped > 0
    db = tmp_path / "run" / "run.sqlite"
    events = rows(db, "SELECT message FROM events WHERE kind = 'stale_drop'")
    assert sum(int(m.split()[1]) for (m,) in events) == dropped
    last = json.loads(rows(db, "SELECT metrics FROM steps ORDER BY step DESC LIMIT 1")[0][0])
    assert last["stale_dropped"] == dropped


@pytest.mark.parametrize(("schedule", "hinted_steps"), [("once", {0, 2}), ("every_step", {0, 1, 2, 3})])
async def test_hinted_plays_once_per_environment_unless_every_step(
    tmp_path: Path, schedule: str, hinted_steps: set[int]
) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=2, hinted_schedule=schedule)
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        await pipeline.run(sync=True)
    db = tmp_path / "run" / "run.sqlite"
    assert {s for (s,) in rows(db, "SELECT DISTINCT step FROM episodes WHERE hinted = 1")} == hinted_steps
    assert {s for (s,) in rows(db, "SELECT DISTINCT step FROM episodes WHERE hinted = 0")} == {0, 1, 2, 3}
