"""Archive re-evaluation inside the real orchestrator (scripted engine and learner, real
sandbox and SQLite): retired environments replayed by the live adapter every
``eval.archive_every`` steps, their return now stored beside their return at retirement, a
forgotten environment counted as no longer solved, and a slow round never holding the
learner back (requests skipped and counted)."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path
from typing import Any

import anyio
import pytest

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.eval.archive.sample import Member
from spade_async.report.build import build_report
from spade_async.run.assemble import innermost, open_run
from spade_async.selfplay.play.agent import Episode
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner
from spade_async.util.failpoints import InjectedFailure
from tests.integration.test_pipeline import make_config, rows
from tests.integration.test_resume import wait_for
from tui.reader import RunReader

pytestmark = pytest.mark.anyio

HEADS_ENV = COIN_ENV.replace('"heads" if self.rng.random() < 0.7 else "tails"', '"heads"').replace(
    "Call a weighted coin flip.", "Call a coin that always lands heads."
)
ARCHIVE = (
    "SELECT step, env_id, adapter, retired_step, return_then, return_now, n, n_errors, solved_then, solved_now "
    "FROM archive_evals ORDER BY id"
)


def archive_config(tmp_path: Path, *, every: int, max_steps: int) -> Config:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=2, plays=4, hinted_plays=0)
    (tmp_path / "pool" / "heads.py").write_text(HEADS_ENV)
    cfg.run.max_steps = max_steps
    cfg.run.checkpoint_every = 10
    cfg.sandbox.call_timeout_s = 10.0  # a starved 2-core machine must not turn an episode into an error
    return Config.model_validate(
        {
            **cfg.model_dump(),
            "eval": {"archive_every": every, "archive_size": 8, "archive_episodes": 2, "archive_solved": 0.5},
        }
    )


def forgetting_engine() -> ScriptedEngine:
    """Calls heads up to adapter v1 (the steps the first generation is played at), tails after:
    the policy forgets what solved the always-heads coin."""
    engine = ScriptedEngine()

    def agent(prompt: str, rng: random.Random) -> str:
        return "\\boxed{heads}" if engine.adapter_version <= 1 else "\\boxed{tails}"

    engine.policies["agent"] = agent
    return engine


def patient_archive(p: Any) -> None:
    """Each consume waits until no archive round is in flight, so every due request finds the
    player idle (a test device: the real consumer never waits)."""
    consume = p.consume

    async def wait_then_consume(batch: Any) -> dict[str, float]:
        await wait_for(lambda: not p.archive.running)
        return await consume(batch)

    p.consume = wait_then_consume


async def test_archive_rounds_record_return_now_beside_return_at_retirement(tmp_path: Path) -> None:
    cfg = archive_config(tmp_path, every=2, max_steps=6)
    lines: list[str] = []
    async with open_run(cfg, engine=forgetting_engine(), learner=ScriptedLearner(), report=lines.append) as p:
        patient_archive(p)
        with anyio.fail_after(120):  # a deadlock guard (a player never started would hang the drain)
            assert await p.run(sync=True) == 6
        # Step 2's regeneration retired the first generation: the archive is empty after step 2
        # (index 1), so the first round is the one due after step 4 (index 3).
        assert p.archive.played == [3, 5] and p.archive.skipped == 0
        members = {m.env_id: m for m in p.archive_sample.members}
    db = tmp_path / "run" / "run.sqlite"
    found = rows(db, ARCHIVE)
    assert len(members) == 2 and [r[0] for r in found] == [3, 3, 5, 5]
    assert {r[1] for r in found} == set(members)
    codes = dict(rows(db, "SELECT id, code FROM environments"))
    live = dict(rows(db, "SELECT step, adapter_version FROM steps"))
    for step, env_id, adapter, retired_step, then, now, n, n_errors, solved_then, solved_now in found:
        plain = [o for (o,) in rows(db, f"SELECT outcome FROM episodes WHERE env_id = '{env_id}' AND step < 2")]
        assert retired_step == 2 and then == pytest.approx(statistics.fmean(plain))  # its life: steps 1-2
        assert (n, n_errors) == (2, 0) and adapter.startswith(f"v{live[step]}")
        assert solved_then == int(then >= 0.5) and solved_now == int(now >= 0.5)
        if "always lands heads" in codes[env_id]:
            assert (then, now, solved_then, solved_now) == (1.0, 0.0, 1, 0)  # forgotten
    archive_lines = [line for line in lines if line.startswith("archive after step ")]
    assert [line.split(",")[0] for line in archive_lines] == ["archive after step 4", "archive after step 6"]
    first = [r for r in found if r[0] == 3]
    still, then_solved = sum(r[8] and r[9] for r in first), sum(r[8] for r in first)
    assert still < then_solved and f"still solved {still}/{then_solved} " in archive_lines[0]
    # The same rounds as the TUI's reader and the report read them back from the database.
    reader = RunReader(db)
    try:
        assert [(r["step"], r["env_id"]) for r in reader.poll().archive] == [(r[0], r[1]) for r in found]
    finally:
        reader.close()
    build_report(tmp_path / "run")
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "## Archive re-evaluation" in md and (tmp_path / "run" / "report" / "archive.png").is_file()
    table = [line for line in md.splitlines() if line.startswith(("| 4 |", "| 6 |"))]
    assert len(table) == 2 and f"| {still}/{then_solved} (" in table[0]


async def test_expelled_environments_stay_out_of_the_archive(tmp_path: Path) -> None:
    cfg = archive_config(tmp_path, every=2, max_steps=3)
    async with open_run(cfg, engine=forgetting_engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        await p.produce(0)
        heads = next(e.env_id for e in p.curriculum.live if "always lands heads" in e.code)
        (coin,) = (e.env_id for e in p.curriculum.live if e.env_id != heads)
        assert p.curriculum.expel(heads, "failed the play audit (test)") is not None
        await p.generator.regenerate(2)  # retires the generation: the expelled one as invalid
        assert [m.env_id for m in p.archive_sample.members] == [coin]


@pytest.mark.parametrize("sync", [True, False])
async def test_a_slow_archive_round_never_holds_the_learner(tmp_path: Path, sync: bool) -> None:
    steps = 8
    cfg = archive_config(tmp_path, every=1, max_steps=steps)
    consumed: list[int] = []
    async with open_run(cfg, engine=forgetting_engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        consume = p.consume

        async def counted(batch: Any) -> dict[str, float]:
            metrics = await consume(batch)
            consumed.append(batch.step)
            return metrics

        p.consume = counted  # type: ignore[method-assign]
        play = p.archive.play

        async def slow_play(engine: Engine, member: Member, seed: int) -> Episode:
            # The first round cannot finish before the consumer has done every step: if the
            # learner waited for it, the run would never end.
            await wait_for(lambda: len(consumed) == steps)
            return await play(engine, member, seed)

        p.archive.play = slow_play  # type: ignore[method-assign]
        with anyio.fail_after(120):  # a deadlock guard, not a speed check
            assert await p.run(sync=sync) == steps
        assert consumed == list(range(steps))
        assert len(p.archive.played) == 1  # drained at the end of the run
        first = p.archive.played[0]
        assert p.archive.skipped == steps - 1 - first  # every later request found it busy
    db = tmp_path / "run" / "run.sqlite"
    assert rows(db, "SELECT step FROM steps ORDER BY step") == [(s,) for s in range(steps)]
    assert {r[0] for r in rows(db, ARCHIVE)} == {first}


async def test_resume_keeps_the_archive_and_drops_the_replayed_rounds(tmp_path: Path) -> None:
    cfg = archive_config(tmp_path, every=1, max_steps=6)
    cfg.run.checkpoint_every = 2
    with pytest.raises(BaseException) as raised:
        async with open_run(cfg, engine=forgetting_engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
            consume = p.consume

            async def crash_at_step_6(batch: Any) -> dict[str, float]:
                if batch.step == 5:  # the newest checkpoint is the one after step 4 (index 3)
                    raise InjectedFailure("crash during step 6")
                return await consume(batch)

            p.consume = crash_at_step_6  # type: ignore[method-assign]
            patient_archive(p)  # outermost: step 5's round is finished before the crash
            await p.run(sync=True)
    assert isinstance(innermost(raised.value), InjectedFailure)
    members = list(p.archive_sample.members)
    db = tmp_path / "run" / "run.sqlite"
    assert rows(db, "SELECT max(step) FROM checkpoints") == [(3,)]
    assert sorted({r[0] for r in rows(db, ARCHIVE)}) == [2, 3, 4]
    step4_before = rows(db, "SELECT max(created_at) FROM archive_evals WHERE step = 4")[0][0]

    async with open_run(
        cfg, resume=True, engine=forgetting_engine(), learner=ScriptedLearner(), report=lambda s: None
    ) as p:
        assert p.start_step == 4
        assert p.archive_sample.members == members  # restored from the checkpoint
        assert rows(db, "SELECT count(*) FROM archive_evals WHERE step = 4") == [(0,)]  # replayed: gone
        patient_archive(p)
        assert await p.run(sync=True) == 2
        assert p.archive.played == [4, 5]
    assert sorted({r[0] for r in rows(db, ARCHIVE)}) == [2, 3, 4, 5]
    assert rows(db, "SELECT min(created_at) FROM archive_evals WHERE step = 4")[0][0] > step4_before


async def test_throughput_leaves_archive_tokens_out_and_off_by_default_writes_nothing(tmp_path: Path) -> None:
    cfg = archive_config(tmp_path, every=1, max_steps=4)
    engine = forgetting_engine()
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as p:
        patient_archive(p)
        assert await p.run(sync=True) == 4
        archived = p.archive.generated_tokens
    db = tmp_path / "run" / "run.sqlite"
    played = sum(
        json.loads(m)["tokens_per_s"] * json.loads(m)["time_play_s"] for (m,) in rows(db, "SELECT metrics FROM steps")
    )
    assert archived > 0 and played > 0
    assert played + archived == pytest.approx(engine.generated_tokens, rel=1e-6)  # every token counted once

    (tmp_path / "off").mkdir()
    off = make_config(tmp_path / "off", mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    off.run.max_steps = 3
    assert off.eval.archive_every == 0
    async with open_run(off, engine=forgetting_engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        assert await p.run(sync=True) == 3
        assert p.archive_sample.members == [] and p.archive.played == []
    assert rows(tmp_path / "off" / "run" / "run.sqlite", "SELECT count(*) FROM archive_evals") == [(0,)]
