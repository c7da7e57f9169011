"""The failure summary in real design prompts: episodes played in the real sandbox and written
through the store, read back by ``Store.play_stats``, rendered into the designer's prompt with
the real SmolLM2 tokenizer and fitted to a CPU preset's ``engine.max_model_len``; and the
pipeline's call site, on and off."""

from __future__ import annotations

import itertools
import random
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_async.config import SandboxConfig, load_config
from spade_async.config.presets import resolve_config
from spade_async.engine.base import Sampling
from spade_async.engine.hf import HFEngine
from spade_async.envs.seeds import load_seeds
from spade_async.memory.play_stats import play_error_message
from spade_async.memory.records import EnvRecord, EpisodeRecord
from spade_async.memory.retrieval import Example
from spade_async.memory.store import Store
from spade_async.run.assemble import open_run
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.curriculum import LiveEnv
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import DesignJob, fit_design_prompt, prompt_budget
from spade_async.selfplay.design.failures import SUMMARY_TITLE, failure_summary
from spade_async.selfplay.play.agent import Episode, play_episode
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import coin_variant, heads_if_hinted, make_config

pytestmark = pytest.mark.anyio

PRESET = "tiny_vllm"  # failure summaries on, 2048 tokens with 640 for the design (tiny turns them off)
"""A CPU preset with the switch on: max_model_len 2048, the designer's budget what its new tokens leave."""


def guesser(prompt: str, rng: random.Random) -> str:
    """A poor number-guess player: random guesses, and now and then no action at all."""
    if rng.random() < 0.2:
        return "I am not sure what to do."
    return f"\\boxed{{guess {rng.randint(1, 100)}}}"


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0)) as p:
        yield p


async def played_env(tmp_path: Path, pool: SandboxPool, max_turns: int) -> tuple[Store, EnvRecord]:
    """number_guess recorded and played 12 plain and 4 hinted times by :func:`guesser`, one play crashed."""
    seed = next(s for s in load_seeds() if s.name == "number_guess")
    store = await Store.open(tmp_path / "run.sqlite")
    await store.start_run("t", "", None)
    rec = EnvRecord(code=seed.source, domain="games", skill=seed.skill, origin="seed", created_step=0, hint=seed.hint)
    await store.record_environment(rec)
    engine = ScriptedEngine(policies={"agent": guesser}, seed=3)
    episodes = []
    for i in range(16):
        hint = seed.hint if i >= 12 else None
        ep = await play_episode(
            engine,
            pool,
            env_id=rec.id,
            source=seed.source,
            seed=i,
            hint=hint,
            sampling=Sampling(max_new_tokens=32),
            max_turns=max_turns,
            max_context_tokens=100_000,
            no_action_penalty=-0.1,
        )
        assert ep.error is None
        episodes.append(
            EpisodeRecord(0, rec.id, 0, ep.hinted, ep.outcome, ep.turns, ep.truncated, transcript=ep.transcript)
        )
    await store.record_episodes(episodes)
    await store.record_event(0, "error", play_error_message(rec.id, "SandboxTimeout: step took more than 2.0 s"))
    return store, rec


async def test_a_real_design_prompt_shows_the_summary_and_fits_the_preset(
    tmp_path: Path, pool: SandboxPool, tiny_model_dir: Path
) -> None:
    cfg = load_config(resolve_config(PRESET))
    assert cfg.memory.failure_summary  # on in the preset: this test is what says it fits
    store, rec = await played_env(tmp_path, pool, cfg.selfplay.max_turns)
    try:
        stats = (await store.play_stats([rec.id]))[rec.id]
    finally:
        await store.aclose()
    assert (stats.plain, stats.hinted, stats.play_errors) == (12, 4, (("SandboxTimeout", 1),))
    summary = failure_summary(stats, cfg.selfplay.max_turns)
    assert summary.startswith(f"{SUMMARY_TITLE} (12 plain plays, 4 with the hint):")
    assert "\\boxed{guess " in summary and "plays that crashed: SandboxTimeout x1" in summary

    engine = HFEngine(tiny_model_dir, seed=0, max_model_len=cfg.engine.max_model_len)
    designer = Sampling.from_config(cfg.engine.designer)
    budget = prompt_budget(engine.max_model_len, designer)
    assert budget is not None
    doc = Document("d", "Doc", ("The rules of an old counting game, told at length. " * 20)[: cfg.corpus.max_chars])
    for origin in ("mutation", "fresh"):
        job = DesignJob(
            rec.skill or "",
            doc,
            origin,
            parent=rec if origin == "mutation" else None,
            examples=[Example(rec, "impossible")][: cfg.memory.examples_shown],
            change="allow fewer turns, so the player must plan the probes",
            summaries={rec.id: summary},
        )
        ids, shown = fit_design_prompt(engine, job, budget, enable_thinking=designer.enable_thinking)
        assert len(ids) + designer.max_new_tokens <= cfg.engine.max_model_len, origin
        assert shown.summaries == {rec.id: summary} and shown.origin == origin, origin  # kept, not dropped
        text = engine.decode(ids)
        assert summary.splitlines()[0] in text and summary.splitlines()[-1] in text, origin


def summary_designer(prompts: list[str]):
    counter = itertools.count(1)

    def policy(prompt: str, rng: object) -> str:
        prompts.append(prompt)
        return f"```python\n{coin_variant(next(counter))}```"

    return policy


async def run_and_capture(tmp_path: Path, on: bool) -> tuple[list[str], Path]:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, mutation_fraction=0.5)
    cfg.memory.failure_summary = on
    prompts: list[str] = []
    engine = ScriptedEngine(policies={"designer": summary_designer(prompts), "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    return prompts, tmp_path / "run" / "run.sqlite"


async def test_the_pipeline_shows_what_the_episodes_table_holds(tmp_path: Path) -> None:
    prompts, db = await run_and_capture(tmp_path, on=True)
    with sqlite3.connect(db) as conn:
        envs = conn.execute("SELECT id, code FROM environments WHERE valid = 1").fetchall()
        plain = dict(
            conn.execute("SELECT env_id, count(*) FROM episodes WHERE hinted = 0 AND step < 2 GROUP BY env_id")
        )
    summarised = [p for p in prompts if SUMMARY_TITLE in p]
    assert summarised, "no design prompt of the second generation showed a failure summary"
    for prompt in summarised:
        shown = [env_id for env_id, code in envs if code.strip() in prompt]
        assert len(shown) == 1
        (count,) = re.findall(re.escape(SUMMARY_TITLE) + r" \((\d+) plain plays", prompt)
        assert int(count) == plain[shown[0]]  # the plays recorded before this generation was designed


async def test_turning_the_switch_off_removes_the_summary(tmp_path: Path) -> None:
    prompts, _ = await run_and_capture(tmp_path, on=False)
    assert len(prompts) == 4 and not any(SUMMARY_TITLE in p for p in prompts)


async def test_the_pipeline_records_crashed_plays_where_the_summary_reads_them(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1)
    code = coin_variant(1)
    async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        env_id = await pipeline.store.record_environment(
            EnvRecord(code=code, domain="games", skill="Pattern Recognition", origin="fresh", created_step=0, hint="h")
        )
        env = LiveEnv(env_id, code, "h", "Pattern Recognition", "fresh", 0)
        pipeline.curriculum.live = [env]
        played = [
            (
                env,
                Episode(env_id, False, i, float(i % 2), 1, False, [], error="SandboxTimeout: slow" if i < 3 else None),
            )
            for i in range(5)
        ]
        await pipeline._score_plays(0, played)
        stats = (await pipeline.store.play_stats([env_id]))[env_id]
    assert (stats.plain, stats.plain_wins, stats.play_errors) == (2, 1, (("SandboxTimeout", 3),))
