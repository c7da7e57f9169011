"""Resume in process (scripted engine and learner, real sandbox and SQLite): a spade-mode run
interrupted with designs awaiting their delayed score resumes to the same samples as an
uninterrupted run; a changed config is refused without --force; checkpoints are pruned to
``keep_checkpoints``; SIGTERM and a second Ctrl-C stop the run as documented."""

from __future__ import annotations

import hashlib
import itertools
import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from spade_async.config import Config
from spade_async.engine.base import Completion, GenerationRequest
from spade_async.run.assemble import RunError, innermost, open_run
from spade_async.testing import BROKEN_ENV, ScriptedEngine, ScriptedLearner
from spade_async.util import failpoints
from spade_async.util.failpoints import InjectedFailure
from tests.integration.test_pipeline import coin_variant, heads_if_hinted, make_config, rows

pytestmark = pytest.mark.anyio


def prompt_designer(prompt: str, rng: object) -> str:
    """Coin or broken code, decided by the prompt alone (restored exactly by a checkpoint)."""
    digest = hashlib.sha256(prompt.encode()).digest()
    code = coin_variant(int.from_bytes(digest[1:5])) if digest[0] % 2 else BROKEN_ENV  # a new game, not the seed's copy
    return f"```python\n{code}```"


def spade_config(tmp_path: Path, name: str) -> Config:
    cfg = make_config(tmp_path / name, mode="spade", skills_per_regen=1, repair_turns=0, envs_per_step=4)
    cfg.run.max_steps = 4
    cfg.run.checkpoint_every = 1
    return cfg


def engine() -> ScriptedEngine:
    return ScriptedEngine(policies={"designer": prompt_designer, "agent": heads_if_hinted})


def fingerprint(learner: ScriptedLearner, first_step: int) -> list[list[tuple[str, float, tuple[int, ...]]]]:
    """What each trained step saw: role, advantage and tokens of every sample (order-free)."""
    return [
        sorted((s.role, round(s.advantage, 9), tuple(s.input_ids)) for s in batch)
        for batch in learner.batches[first_step:]
    ]


EPISODES = "SELECT step, env_id, hinted, outcome, transcript FROM episodes ORDER BY step, env_id, hinted, transcript"


async def test_spade_resume_with_pending_designs_equals_the_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    reference = ScriptedLearner()
    async with open_run(spade_config(tmp_path, "a"), engine=engine(), learner=reference, report=lambda s: None) as p:
        assert await p.run(sync=True) == 4
    # Interrupted during step 3's learner step: the checkpoint after step 2 (index 1) holds
    # generation 0's designs, scored only at step 3 (index 2, regen_every = 2).
    cfg = spade_config(tmp_path, "b")
    monkeypatch.setenv("SPADE_ASYNC_RAISE_AT", "learn:3")
    failpoints._hits.clear()
    with pytest.raises(BaseException) as raised:
        async with open_run(cfg, engine=engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
            await p.run(sync=True)
    assert isinstance(innermost(raised.value), InjectedFailure)
    monkeypatch.delenv("SPADE_ASYNC_RAISE_AT")
    db = tmp_path / "b" / "run" / "run.sqlite"
    assert rows(db, "SELECT max(step) FROM checkpoints") == [(1,)]
    resumed = ScriptedLearner()
    async with open_run(cfg, resume=True, engine=engine(), learner=resumed, report=lambda s: None) as p:
        assert p.start_step == 2
        assert any(e.design is not None for e in p.curriculum.live), "designs must be awaiting their score"
        resumed.version = 2  # the scripted learner's state: what load_state_dict restored
        assert await p.run(sync=True) == 2
    assert any(s.role == "designer" for s in resumed.batches[0]), "the pending designs were scored after resume"
    assert fingerprint(resumed, 0) == fingerprint(reference, 2)
    assert rows(db, EPISODES) == rows(tmp_path / "a" / "run" / "run.sqlite", EPISODES)
    assert rows(db, "SELECT step FROM steps ORDER BY step") == [(0,), (1,), (2,), (3,)]


async def test_changed_config_is_refused_unless_forced(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        p.cfg.run.max_steps = 2
        await p.run(sync=True)
    changed = cfg.model_copy(deep=True)
    changed.selfplay.plays = 3
    changed.run.max_steps = 4
    with pytest.raises(RunError, match=r"config differs .* pass --force"):
        async with open_run(
            changed, resume=True, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None
        ):
            pass
    async with open_run(
        changed, resume=True, force=True, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None
    ) as p:
        assert p.start_step == 2
        await p.run(sync=True)
    db = tmp_path / "run" / "run.sqlite"
    assert rows(db, "SELECT count(*) FROM events WHERE message LIKE '%changed config (--force)%'") == [(1,)]
    assert "plays = 3" in (tmp_path / "run" / "config.toml").read_text()


async def test_keep_checkpoints_prunes_the_oldest(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    cfg.run.max_steps = 5
    cfg.run.checkpoint_every = 1
    cfg.run.keep_checkpoints = 2
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        await p.run(sync=True)
    folders = sorted(q.name for q in (tmp_path / "run" / "checkpoints").iterdir())
    assert folders == ["step_4", "step_5"]  # named by the step as the console counts it (from 1)


async def test_resume_of_a_finished_run_changes_nothing(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    cfg.run.max_steps = 2
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        await p.run(sync=True)
        await p.store.set_run_status("finished")
    db = tmp_path / "run" / "run.sqlite"
    events = rows(db, "SELECT count(*) FROM events")
    async with open_run(
        cfg, resume=True, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None
    ) as p:
        assert p.start_step == 2
    assert rows(db, "SELECT status FROM runs") == [("finished",)] and rows(db, "SELECT count(*) FROM events") == events


async def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (no deadline: pytest's own timeout, if any, bounds the test)."""
    for _ in itertools.count():
        if condition():
            return
        await anyio.sleep(0.01)


class HeldEngine(ScriptedEngine):
    """Generation issued once ``hold()`` is true waits for ``release``: the step in flight
    when the test signals cannot finish on its own, whatever the machine's load."""

    def __init__(self, hold: Callable[[], bool]) -> None:
        super().__init__()
        self.hold, self.release, self.held = hold, anyio.Event(), 0

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if self.hold():
            self.held += 1
            await self.release.wait()
        return await super().generate(requests)


async def _run_and_signal(tmp_path: Path, signals: list[signal.Signals], *, release: bool) -> tuple[int, Path]:
    """Start a long run; once step 1 is trained and step 2's generation is held, send
    ``signals`` to this process, then (``release``) let the held generation go on."""
    # 8 plays of the coin game: a step whose plays all end alike has no GRPO signal and trains
    # nothing (2 plays did, once the scripted agent's guesses came from each play's seed)
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=8, hinted_plays=0)
    cfg.run.max_steps = 50
    cfg.run.checkpoint_every = 100
    learner = ScriptedLearner()
    engine = HeldEngine(hold=lambda: bool(learner.batches))  # sync mode: step 2 starts after step 1 trains
    done: dict[str, int] = {}
    async with open_run(cfg, engine=engine, learner=learner, report=lambda s: None) as p:

        async def drive() -> None:
            done["steps"] = await p.run(sync=True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await wait_for(lambda: engine.held > 0)  # step 2's generation is in flight, held
            for sig in signals:
                os.kill(os.getpid(), sig)
                await anyio.sleep(0.05)
            if release:
                engine.release.set()
    return done["steps"], tmp_path / "run" / "run.sqlite"


async def test_sigterm_stops_after_the_step_in_flight_with_it_checkpointed(tmp_path: Path) -> None:
    steps, db = await _run_and_signal(tmp_path, [signal.SIGTERM], release=True)
    assert 2 <= steps < 50  # the step in flight when the signal came was finished
    last = rows(db, "SELECT max(step) FROM steps")[0][0]
    assert last == steps - 1 and rows(db, "SELECT max(step) FROM checkpoints") == [(last,)]


@pytest.mark.timeout(300)
async def test_second_ctrl_c_stops_now_and_the_last_checkpoint_stands(tmp_path: Path) -> None:
    # step 2's generation is never released: only the second Ctrl-C's immediate stop can end
    # the run (if it did not, the test would hang until pytest's timeout)
    steps, db = await _run_and_signal(tmp_path, [signal.SIGINT, signal.SIGINT], release=False)
    assert steps == 1  # step 2 was cut short in generation, not finished
    assert rows(db, "SELECT step FROM steps") == [(0,)]
    assert rows(db, "SELECT max(step) FROM checkpoints") == [(0,)]  # the consumed step is saved
