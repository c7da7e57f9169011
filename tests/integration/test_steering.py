"""Steering a live run (scripted engine and learner, real sandbox and SQLite): requests written
like the CLI writes them, while a step plays, take effect at the next step, once; invalid
ones are refused with a reason and change nothing; designer credit stays with the designer's
own environments."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from spade_async.memory.steering import SteerError, queue_action, requester
from spade_async.run.assemble import open_run
from spade_async.run.pipeline import Pipeline
from spade_async.testing import BROKEN_ENV, COIN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, make_config, rows

pytestmark = pytest.mark.anyio

INJECTED_ENV = COIN_ENV.replace("WeightedCoin", "InjectedCoin").replace('"Pattern Recognition"', '"Logical Deduction"')


def numbered_designer() -> Callable[[str, object], str]:
    """A new coin variant (admitted) then broken code (rejected), in turn: no design repeats."""
    n = itertools.count()

    def policy(prompt: str, rng: object) -> str:
        i = next(n)
        return f"```python\n{COIN_ENV}DESIGN_NO = {i}\n```" if i % 2 == 0 else f"```python\n{BROKEN_ENV}```"

    return policy


def queue_during_step(pipeline: Pipeline, step: int, ask: Callable[[Pipeline], None]) -> None:
    """Call ``ask`` (in a thread, as another process would write) while ``step`` plays."""
    original = pipeline._play_all

    async def hooked(s: int) -> Any:
        if s == step:
            await anyio.to_thread.run_sync(ask, pipeline)
        return await original(s)

    pipeline._play_all = hooked  # type: ignore[method-assign]


def actions(db: Path) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT id, kind, status, step, message FROM steer_actions ORDER BY id")


async def test_retire_pin_inject_take_effect_at_the_next_step(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, regen_every=3)
    db = tmp_path / "run" / "run.sqlite"
    env_file = tmp_path / "mine.py"
    env_file.write_text(INJECTED_ENV)
    ids: dict[str, str] = {}

    def ask(p: Pipeline) -> None:
        designed = next(e for e in p.curriculum.live if e.design is not None)
        other = next(e for e in p.curriculum.live if e.design is None)
        ids.update(designed=designed.env_id, other=other.env_id)
        who = requester("cli")
        queue_action(db, "retire", {"env_id": designed.env_id[:8], "reason": "trivially exploited"}, who)
        queue_action(db, "pin", {"env_id": other.env_id[:8]}, who)
        queue_action(
            db, "inject", {"code": env_file.read_text(), "name": env_file.name, "skill": "", "pin": False}, who
        )
        queue_action(db, "inject", {"code": BROKEN_ENV, "name": "broken.py", "skill": "", "pin": False}, who)
        with pytest.raises(SteerError, match="no environment with id"):  # checked where it is asked: no row
            queue_action(db, "retire", {"env_id": "ffffffff"}, who)
        with pytest.raises(SteerError, match="need 0 <= LOW <= HIGH <= 1"):
            queue_action(db, "band", {"low": 0.5, "high": 1.5}, who)

    learner = ScriptedLearner()
    async with open_run(
        cfg, engine=ScriptedEngine(policies={"designer": numbered_designer()}), learner=learner, report=lambda s: None
    ) as pipeline:
        queue_during_step(pipeline, 0, ask)
        assert await pipeline.run(sync=True) == 4
        pinned_at_end = set(pipeline.curriculum.pinned)
    injected = rows(db, "SELECT id, origin, created_step, skill FROM environments WHERE code LIKE '%InjectedCoin%'")
    assert len(injected) == 1 and injected[0][1:] == ("injected", 1, "Logical Deduction")
    injected_id = injected[0][0]
    # Each request settled once, at step 1 (the step after the one it was asked during), in order.
    settled = actions(db)
    assert [(k, s, st) for _, k, s, st, _ in settled] == [
        ("retire", "applied", 1),
        ("pin", "applied", 1),
        ("inject", "applied", 1),
        ("inject", "rejected", 1),
    ]
    assert "validation" in settled[3][4]  # the validator's reasons are on the row
    played = {(s, e) for s, e in rows(db, "SELECT DISTINCT step, env_id FROM episodes")}
    # Retired: played at step 0 only. Injected: from step 1 until its generation ends (regen at 3).
    assert {s for s, e in played if e == ids["designed"]} == {0}
    assert {s for s, e in played if e == injected_id} == {1, 2}
    assert rows(db, f"SELECT DISTINCT step FROM episodes WHERE hinted = 1 AND env_id = '{injected_id}'") == [(1,)]
    # Pinned: carried into the generation designed at step 3.
    assert {s for s, e in played if e == ids["other"]} == {0, 1, 2, 3}
    assert pinned_at_end == {ids["other"]}
    # Retired, and scored when its generation ended (step 3: the stats row took its designer reward then).
    assert rows(db, f"SELECT status, updated_step FROM environments WHERE id = '{ids['designed']}'") == [("retired", 3)]
    # Designer credit: the retired design is scored with its generation (at step 3, over the
    # step it lived); nothing is ever credited for the injected environment.
    designer = [s for b in learner.batches for s in b if s.role == "designer"]
    assert any(s.meta.get("env_id") == ids["designed"] for s in designer)
    assert not any(s.meta.get("env_id") == injected_id for s in designer)
    coin_reward = rows(db, f"SELECT designer_reward FROM environments WHERE id = '{ids['designed']}'")[0][0]
    assert coin_reward is not None
    events = rows(db, "SELECT step, message FROM events WHERE kind = 'steer' ORDER BY id")
    assert [s for s, _ in events] == [1, 1, 1, 1] and events[3][1].startswith("REJECTED inject broken.py")
    assert "trivially exploited" in events[0][1] and "by cli " in events[0][1]
    # The report lists every request with the step it took effect at, and marks that step.
    from spade_async.report.build import build_report
    from spade_async.report.data import read_run

    assert read_run(db).steered_steps() == [2]  # 1-based: step index 1
    report = build_report(tmp_path / "run")[0].read_text()
    steering = report.split("## Steering", 1)[1].split("##", 1)[0]
    table = [line.split(" | ") for line in steering.splitlines() if line[:3] in ("| 1", "| 2", "| 3", "| 4")]
    assert [(row[1], row[4]) for row in table] == [("2", "applied")] * 3 + [("2", "rejected")]
    assert "failed validation" in table[3][5]


async def test_band_and_designer_share_hold_for_the_rest_of_the_run(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, regen_every=2)
    db = tmp_path / "run" / "run.sqlite"

    def ask(p: Pipeline) -> None:
        queue_action(db, "band", {"low": 0.2, "high": 0.9}, "test")
        queue_action(db, "designer_share", {"share": 0.0}, "test")

    engine = ScriptedEngine(policies={"designer": alternating_designer()})
    designer_calls: list[int] = []
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        queue_during_step(pipeline, 0, ask)
        original = pipeline.generator._run_designs

        async def counted(step: int) -> Any:
            designs = await original(step)
            designer_calls.append(len(designs))
            return designs

        pipeline.generator._run_designs = counted  # type: ignore[method-assign]
        assert await pipeline.run(sync=True) == 4
        assert (pipeline.sp.plateau_low, pipeline.sp.plateau_high) == (0.2, 0.9)
    assert designer_calls == [2, 0]  # generation 0 designed; generation 1 (step 2) did not
    metrics = [json.loads(m) for (m,) in rows(db, "SELECT metrics FROM steps ORDER BY step")]
    assert metrics[0]["valid_fraction"] == 0.5 and metrics[2]["valid_fraction"] is None
    assert all(m["n_envs"] >= 1 for m in metrics)  # memory filled the live set
    assert [(k, st, s) for _, k, st, s, _ in actions(db)] == [("band", "applied", 1), ("designer_share", "applied", 1)]
    # The checkpoint after the last step carries the steering state.
    from spade_async.run.checkpoint import read_checkpoint

    state = read_checkpoint(tmp_path / "run" / "checkpoints" / "step_4")["snapshot"]["curriculum"]["steering"]
    assert state["band"] == (0.2, 0.9) and state["design_share"] == 0.0
    assert not math.isnan(metrics[3]["plain_return_mean"])


async def test_designer_share_is_refused_for_a_fixed_pool(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1)
    cfg.run.max_steps = 1
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        await pipeline.run(sync=True)
    with pytest.raises(SteerError, match="fixed pool"):
        queue_action(tmp_path / "run" / "run.sqlite", "designer_share", {"share": 0.5}, "test")
    assert actions(tmp_path / "run" / "run.sqlite") == []


ROOT = Path(__file__).resolve().parents[2]


def child(
    root: Path, steps: int, *, resume: bool = False, kill_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The scripted run in a process of its own (``tests/integration/steer_child.py``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPADE_ASYNC_KILL_AT", "SPADE_ASYNC_RAISE_AT")}
    env["PYTHONPATH"] = str(ROOT)
    if kill_at:
        env["SPADE_ASYNC_KILL_AT"] = kill_at
    cmd = [
        sys.executable,
        "-m",
        "tests.integration.steer_child",
        str(root),
        str(steps),
        *(["--resume"] if resume else []),
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("kill_at", ["steer_apply:1", "steer_applied:2"])
def test_kill_9_between_queueing_and_applying_loses_nothing_and_applies_once(tmp_path: Path, kill_at: str) -> None:
    """Killed before the first request is settled (rows still queued), or after both were
    applied at step 2 but before any checkpoint holds them (rows settled in a timeline the
    resume throws away): either way the resumed run applies each request once, at step 2."""
    db = tmp_path / "run" / "run.sqlite"
    first = child(tmp_path, 2)
    assert first.returncode == 0, first.stderr[-2000:]
    from spade_async.run.checkpoint import read_checkpoint

    # The finished run scored its last generation: the store says 'retired' (the run is over) ...
    live = read_checkpoint(tmp_path / "run" / "checkpoints" / "step_2")["snapshot"]["curriculum"]["live"]
    designed = [e.env_id for e in live if e.design is not None]
    assert designed
    target = designed[0]
    assert rows(db, f"SELECT status, valid FROM environments WHERE id = '{target}'") == [("retired", 1)]
    # ... while the checkpoint's live set is what an extended run continues with (resume restores
    # the stats checkpointed with it: 'active'), so retiring it is accepted and applied.
    queue_action(db, "retire", {"env_id": target[:8], "reason": "kill test"}, "test")
    queue_action(db, "band", {"low": 0.3, "high": 0.7}, "test")
    killed = child(tmp_path, 4, resume=True, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    expected_then = {"steer_apply:1": ["queued", "queued"], "steer_applied:2": ["applied", "applied"]}[kill_at]
    assert [st for _, _, st, _, _ in actions(db)] == expected_then
    if kill_at == "steer_apply:1":  # resumed (the checkpoint's stats back: live again), killed before retiring it
        assert rows(db, f"SELECT status FROM environments WHERE id = '{target}'") == [("active",)]
    done = child(tmp_path, 4, resume=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [(k, st, s) for _, k, st, s, _ in actions(db)] == [("retire", "applied", 2), ("band", "applied", 2)]
    assert rows(db, "SELECT step, count(*) FROM events WHERE kind = 'steer' GROUP BY step") == [(2, 2)]
    # Not played at step 2 (retired); from step 3 a new generation may hold it again (memory, or the same design).
    assert rows(db, f"SELECT DISTINCT step FROM episodes WHERE env_id = '{target}' AND step < 3 ORDER BY step") == [
        (0,),
        (1,),
    ]
    state = read_checkpoint(tmp_path / "run" / "checkpoints" / "step_4")["snapshot"]["curriculum"]["steering"]
    assert state["band"] == (0.3, 0.7)


async def test_pinning_a_retired_environment_brings_it_back_and_keeps_it(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    (tmp_path / "pool" / "other.py").write_text(INJECTED_ENV)
    db = tmp_path / "run" / "run.sqlite"
    ids: dict[str, str] = {}

    def ask(p: Pipeline) -> None:
        ids["live"] = p.curriculum.live[0].env_id
        ids["back"] = next(i for (i,) in rows(db, "SELECT id FROM environments") if i != ids["live"])
        queue_action(db, "pin", {"env_id": ids["back"][:8]}, "test")

    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        queue_during_step(pipeline, 0, ask)
        assert await pipeline.run(sync=True) == 4
    played = rows(db, f"SELECT DISTINCT step FROM episodes WHERE env_id = '{ids['back']}' ORDER BY step")
    assert played == [(1,), (2,), (3,)]  # back from step 1, and carried through the regeneration at step 2
    assert rows(db, f"SELECT DISTINCT step FROM episodes WHERE env_id = '{ids['live']}' AND step < 2") == [(0,), (1,)]
    # Never live twice: a pool pick equal to the pinned environment is not added again.
    assert {n for (n,) in rows(db, "SELECT count(*) FROM episodes GROUP BY step, env_id")} == {2}


async def test_an_injection_at_a_regenerating_step_is_played_in_the_new_generation(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=2)  # regen_every = 2
    db = tmp_path / "run" / "run.sqlite"

    def ask(p: Pipeline) -> None:
        queue_action(db, "inject", {"code": INJECTED_ENV, "name": "mine.py"}, "test")

    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        queue_during_step(pipeline, 1, ask)
        assert await pipeline.run(sync=True) == 4
    [(injected,)] = rows(db, "SELECT id FROM environments WHERE origin = 'injected'")
    assert rows(
        db, f"SELECT DISTINCT step, hinted FROM episodes WHERE env_id = '{injected}' ORDER BY step, hinted"
    ) == [(2, 0), (2, 1), (3, 0)]  # step 2 regenerates: it joins the new generation instead of leaving with the old


async def test_an_environment_retired_by_hand_is_not_refilled_until_pinned(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=2, plays=2, hinted_plays=0)  # regen_every = 2
    cfg.run.max_steps = 6
    (tmp_path / "pool" / "other.py").write_text(INJECTED_ENV)
    db = tmp_path / "run" / "run.sqlite"
    gone: list[str] = []

    def retire(p: Pipeline) -> None:
        gone.append(p.curriculum.live[0].env_id)
        queue_action(db, "retire", {"env_id": gone[0]}, "test")

    def pin(p: Pipeline) -> None:
        queue_action(db, "pin", {"env_id": gone[0]}, "test")

    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        queue_during_step(pipeline, 0, retire)
        queue_during_step(pipeline, 3, pin)
        assert await pipeline.run(sync=True) == 6
    # Both pool environments are drawn at every regeneration (steps 2 and 4): the retired one
    # is skipped at step 2, and comes back only with the pin (at step 4).
    played = rows(db, f"SELECT DISTINCT step FROM episodes WHERE env_id = '{gone[0]}' ORDER BY step")
    assert played == [(0,), (4,), (5,)]
