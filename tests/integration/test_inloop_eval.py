"""In-loop evaluation inside the real orchestrator (scripted engine and learner, real sandbox
and SQLite): rows at the due steps paired against the step-0 base, a slow evaluation never
holding the learner back (requests skipped and counted), resume dropping the replayed rows
and keeping the base, and honest version labels when an evaluation straddles a swap."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from spade_async.config import Config
from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.eval.inloop import BASE_FILE, VersionTap, versions_label
from spade_async.eval.suites import EvalContext, EvalItem, ItemScore, Suite
from spade_async.run.assemble import innermost, open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from spade_async.util.failpoints import InjectedFailure
from tests.integration.test_pipeline import make_config, rows
from tests.integration.test_resume import wait_for

pytestmark = pytest.mark.anyio

EVALS = "SELECT eval_id, step, model, adapter, metric, n, mean, base_mean, delta, ci_low, ci_high FROM evals WHERE task = '*'"


def eval_config(tmp_path: Path, *, every: int, max_steps: int, checkpoint_every: int = 10) -> Config:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=8, hinted_plays=0)
    cfg.run.max_steps = max_steps
    cfg.run.checkpoint_every = checkpoint_every
    cfg.sandbox.call_timeout_s = 10.0  # a starved 2-core machine must not turn an episode into an error
    return Config.model_validate(
        {
            **cfg.model_dump(),
            "eval": {"every": every, "suite": f"envs:{tmp_path / 'pool'}", "episodes": 8, "concurrency": 4},
        }
    )


def trained_engine() -> ScriptedEngine:
    """The base model calls tails, every adapter heads: the weighted coin (70% heads) makes the
    adapters better on held-out seeds, and training groups have variance."""
    engine = ScriptedEngine()

    def agent(prompt: str, rng: random.Random) -> str:
        return "\\boxed{heads}" if engine.adapter_version > 0 else "\\boxed{tails}"

    engine.policies["agent"] = agent
    return engine


def patient(p: Any) -> None:
    """Make each consume wait until no evaluation is in flight, so every request finds the
    evaluator idle and exactly the due steps are evaluated (a test device: the real consumer
    never waits)."""
    consume = p.consume

    async def wait_then_consume(batch: Any) -> dict[str, float]:
        await wait_for(lambda: p.loop_eval.base_ready.is_set() and not p.loop_eval.running)
        return await consume(batch)

    p.consume = wait_then_consume


async def test_rows_at_due_steps_paired_against_the_base(tmp_path: Path) -> None:
    cfg = eval_config(tmp_path, every=2, max_steps=4)
    cfg.log.backends = ["console", "tensorboard"]
    learner = ScriptedLearner()
    lines: list[str] = []
    async with open_run(cfg, engine=trained_engine(), learner=learner, report=lines.append) as p:
        patient(p)
        assert await p.run(sync=True) == 4
        assert p.loop_eval.evaluated == [1, 3] and p.loop_eval.skipped == 0
    db = tmp_path / "run" / "run.sqlite"
    found = rows(db, EVALS + " ORDER BY id")
    base = [r for r in found if r[0] == "loop-base"]
    assert {(r[1], r[2], r[3], r[4]) for r in base} == {
        (None, "base", None, "return"),
        (None, "base", None, "win_rate"),
    }
    assert all(r[5] == 8 and r[8] is None for r in base)  # one environment x 8 held-out episodes
    assert next(r[6] for r in base if r[4] == "return") < 0.5  # the base calls tails: it loses most flips
    loop = [r for r in found if r[0].startswith("loop-step-")]
    # eval_id counts steps from 1 as the console does; the step column is the database's index
    assert sorted({(r[0], r[1]) for r in loop}) == [("loop-step-2", 1), ("loop-step-4", 3)]
    live = dict(rows(db, "SELECT step, adapter_version FROM steps"))
    for _id, step, model, adapter, _metric, n, mean, base_mean, delta, low, high in loop:
        assert model == "loop" and n == 8
        assert live[step] > 0 and adapter.startswith(f"v{live[step]}")  # live after `step`; later ones if it straddled
        assert delta == pytest.approx(mean - base_mean) and low <= delta <= high
        assert delta > 0  # heads beats tails on the held-out seeds of a 70%-heads coin
    assert (tmp_path / "run" / BASE_FILE).is_file()
    # The same figures in the tracking sinks, read back with TensorBoard's own reader.
    from tests.integration.test_tracking import load_scalars

    scalars = load_scalars(tmp_path / "run" / "tensorboard")
    deltas = {r[1]: r[8] for r in loop if r[4] == "return"}
    assert scalars["eval/return_delta"] == [(s + 1, pytest.approx(d)) for s, d in sorted(deltas.items())]
    assert scalars["eval/base_return"] == [(0, pytest.approx(next(r[6] for r in base if r[4] == "return")))]
    assert [v for _, v in scalars["eval/skipped"]] == [0.0, 0.0] and "eval/win_rate_high" in scalars
    eval_lines = [line for line in lines if line.startswith("eval ")]
    assert len(eval_lines) == 3 and eval_lines[0].startswith("eval base model")
    assert eval_lines[1].startswith(f"eval after step 2, v{live[1]}") and "delta +" in eval_lines[1]


class GatedSuite:
    """The suite of the run, except that an adapter's evaluation waits until ``open()``."""

    def __init__(self, inner: Suite, is_open: Any) -> None:
        self.inner, self.is_open = inner, is_open
        self.name, self.metrics, self.needs_sandbox = inner.name, inner.metrics, inner.needs_sandbox

    def items(self) -> list[EvalItem]:
        return self.inner.items()

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        if ctx.engine.adapter_version > 0:
            await wait_for(self.is_open)
        return await self.inner.score(ctx, item)


@pytest.mark.parametrize("sync", [True, False])
async def test_a_slow_evaluation_never_holds_the_learner(tmp_path: Path, sync: bool) -> None:
    steps = 6
    cfg = eval_config(tmp_path, every=1, max_steps=steps)
    learner = ScriptedLearner()
    consumed: list[int] = []
    async with open_run(cfg, engine=trained_engine(), learner=learner, report=lambda s: None) as p:
        consume = p.consume

        async def counted(batch: Any) -> dict[str, float]:
            metrics = await consume(batch)
            consumed.append(batch.step)
            return metrics

        p.consume = counted  # type: ignore[method-assign]
        # The evaluation requested after step 1 cannot finish before the consumer has done all
        # six steps: if the learner waited for it, the run would never end.
        p.loop_eval.suite = GatedSuite(p.loop_eval.suite, lambda: len(consumed) == steps)
        with anyio.fail_after(120):  # a deadlock guard, not a speed check
            assert await p.run(sync=sync) == steps
        assert consumed == list(range(steps)) and learner.batches
        assert p.loop_eval.evaluated == [0]  # drained at the end of the run
        assert p.loop_eval.skipped == steps - 1  # every later request found it busy
    db = tmp_path / "run" / "run.sqlite"
    assert rows(db, "SELECT step FROM steps ORDER BY step") == [(s,) for s in range(steps)]
    loop = rows(db, EVALS + " AND eval_id LIKE 'loop-step-%'")
    # Requested after step 1, played once training was over: labelled with the version it used.
    assert {(r[1], r[3]) for r in loop} == {(0, f"v{learner.version}")}


async def test_resume_drops_replayed_evaluations_and_keeps_the_base(tmp_path: Path) -> None:
    cfg = eval_config(tmp_path, every=1, max_steps=5, checkpoint_every=2)
    learner = ScriptedLearner()
    with pytest.raises(BaseException) as raised:
        async with open_run(cfg, engine=trained_engine(), learner=learner, report=lambda s: None) as p:
            consume = p.consume

            async def crash_at_step_4(batch: Any) -> dict[str, float]:
                if batch.step == 3:  # the newest checkpoint is the one after step 2 (index 1)
                    raise InjectedFailure("crash during step 4")
                return await consume(batch)

            p.consume = crash_at_step_4  # type: ignore[method-assign]
            patient(p)  # outermost: step 3's evaluation is finished before the crash
            await p.run(sync=True)
    assert isinstance(innermost(raised.value), InjectedFailure)
    db = tmp_path / "run" / "run.sqlite"
    assert rows(db, "SELECT max(step) FROM checkpoints") == [(1,)]
    assert rows(db, "SELECT DISTINCT step FROM evals WHERE eval_id LIKE 'loop-step-%' ORDER BY step") == [
        (0,),
        (1,),
        (2,),
    ]
    base_before = rows(db, "SELECT id, mean FROM evals WHERE eval_id = 'loop-base' ORDER BY id")
    step2_before = rows(db, "SELECT max(created_at) FROM evals WHERE step = 2")[0][0]

    resumed = ScriptedLearner()
    engine = trained_engine()
    async with open_run(cfg, resume=True, engine=engine, learner=resumed, report=lambda s: None) as p:
        patient(p)
        resumed.version = 2  # the scripted learner's state: what load_state_dict restored
        engine.adapter_version = 2
        assert p.start_step == 2
        assert rows(db, "SELECT count(*) FROM evals WHERE step = 2") == [(0,)]  # the replayed step's rows are gone
        assert await p.run(sync=True) == 3
        assert p.loop_eval.evaluated == [2, 3, 4]
    assert rows(db, "SELECT id, mean FROM evals WHERE eval_id = 'loop-base' ORDER BY id") == base_before  # reused
    assert rows(db, "SELECT DISTINCT step FROM evals WHERE eval_id LIKE 'loop-step-%' ORDER BY step") == [
        (0,),
        (1,),
        (2,),
        (3,),
        (4,),
    ]
    assert rows(db, "SELECT min(created_at) FROM evals WHERE step = 2")[0][0] > step2_before  # evaluated again
    # Paired against the saved base, not unpaired: every resumed row has a delta.
    assert all(r[8] is not None for r in rows(db, EVALS + " AND step >= 2"))


async def test_versions_of_a_straddling_evaluation_are_all_recorded() -> None:
    engine = ScriptedEngine()
    engine.adapter_version = 4
    tap = VersionTap(engine)
    request = GenerationRequest(engine.encode("hi"), Sampling(max_new_tokens=4))
    await tap.generate([request])
    await engine.load_adapter(5, "v5")
    await tap.generate([request])
    assert tap.versions == {4, 5} and versions_label(tap.versions) == "v4-v5"
    assert versions_label({7}) == "v7" and tap.eos_token_id == engine.eos_token_id  # the rest is the engine's


async def test_evaluation_waits_while_paused_and_counts_its_own_tokens() -> None:
    """A paused run's evaluation holds its requests; its tokens are counted apart, so the
    training throughput (tokens/s of the plays) leaves them out."""
    engine = ScriptedEngine()
    running = anyio.Event()
    tap = VersionTap(engine, gate=running.wait)
    request = GenerationRequest(engine.encode("hi"), Sampling(max_new_tokens=4))
    async with anyio.create_task_group() as tg:
        tg.start_soon(tap.generate, [request])
        await anyio.sleep(0.05)
        assert engine.calls == 0 and tap.tokens == 0  # held at the gate while paused
        running.set()
    assert engine.calls == 1 and tap.tokens == engine.generated_tokens > 0


async def test_pipeline_throughput_leaves_evaluation_tokens_out(tmp_path: Path) -> None:
    cfg = eval_config(tmp_path, every=1, max_steps=2)
    engine = trained_engine()
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as p:
        patient(p)
        assert await p.run(sync=True) == 2
        evaluated = p.loop_eval.generated_tokens
    db = tmp_path / "run" / "run.sqlite"
    played = sum(
        json.loads(m)["tokens_per_s"] * json.loads(m)["time_play_s"] for (m,) in rows(db, "SELECT metrics FROM steps")
    )
    assert evaluated > 0 and played > 0
    assert played + evaluated == pytest.approx(engine.generated_tokens, rel=1e-6)  # every token counted once


async def test_off_by_default_writes_nothing(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    cfg.run.max_steps = 2
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        assert cfg.eval.every == 0 and await p.run() == 2
    assert rows(tmp_path / "run" / "run.sqlite", "SELECT count(*) FROM evals") == [(0,)]
    assert not (tmp_path / "run" / BASE_FILE).exists()


async def test_resume_without_saved_base_scores_says_so_and_reports_unpaired(tmp_path: Path) -> None:
    cfg = eval_config(tmp_path, every=1, max_steps=3, checkpoint_every=1)
    engine = trained_engine()
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as p:
        p.cfg.run.max_steps = 2  # stop early; the resume below goes on to 3
        patient(p)
        assert await p.run(sync=True) == 2
    cfg.run.max_steps = 3
    (tmp_path / "run" / BASE_FILE).unlink()  # e.g. a run folder copied without its eval/ folder
    lines: list[str] = []
    resumed = trained_engine()
    resumed.adapter_version = engine.adapter_version
    async with open_run(cfg, resume=True, engine=resumed, learner=ScriptedLearner(), report=lines.append) as p:
        assert p.start_step == 2 and await p.run(sync=True) == 1
    assert any("no saved base-model scores" in line and "unpaired" in line for line in lines)
    db = tmp_path / "run" / "run.sqlite"
    (row,) = rows(db, EVALS + " AND step = 2 AND metric = 'return'")
    live = rows(db, "SELECT adapter_version FROM steps WHERE step = 2")[0][0]
    assert row[2] == "loop" and row[3] == f"v{live}" and row[6] is not None and row[8] is None
