"""Held-out evaluation end to end with scripted policies (real sandbox, real reasoning-gym,
real SQLite): a policy that answers correctly, one that does not, and the delta between them."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.config import Config
from spade_async.eval.runner import ALL_TASKS, BASE, ModelSpec, evaluate, summarise
from spade_async.eval.suites import SuiteError, build_suite
from spade_async.eval.suites.games import HELDOUT_SEED_BASE, heldout_seed
from spade_async.eval.suites.reasoning import ReasoningGymSuite
from spade_async.memory.store import Store
from spade_async.run.plays import episode_seed
from spade_async.sandbox.pool import SandboxPool
from spade_async.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

ECHO_ENV = """SKILL = "Pattern Recognition"
HINT = "Type the word exactly."
DESCRIPTION = "Repeat a word."


class Echo(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.word = self.rng.choice(["apple", "brick", "cloud", "delta", "ember"])
        return f"Type the word: {self.word}", {}

    def step(self, action):
        said = (self.parse_action(action) or "").strip()
        won = said == self.word
        return ("Yes." if won else "No."), (1.0 if won else 0.0), True, False, {}
"""


def echo_policy(prompt: str, rng: object) -> str:
    return "\\boxed{" + re.findall(r"Type the word: (\w+)", prompt)[-1] + "}"


def wrong_policy(prompt: str, rng: object) -> str:
    return "\\boxed{zzz}"


def versioned(engine: ScriptedEngine, by_version: dict[int, object]):
    """A policy that depends on which adapter is loaded (0 = base)."""
    return lambda prompt, rng: by_version[engine.adapter_version](prompt, rng)  # type: ignore[operator]


@pytest.fixture
def env_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "envs"
    folder.mkdir()
    (folder / "echo.py").write_text(ECHO_ENV)
    return folder


def config() -> Config:
    return Config.model_validate(
        {"run": {"device": "cpu"}, "selfplay": {"max_turns": 2}, "sandbox": {"max_children": 8}}
    )


def test_heldout_seeds_are_beyond_every_training_seed() -> None:
    for step, env, play in ((0, 0, 0), (10**6, 999, 999), (2**31, 2**20, 2**16)):
        assert 0 <= episode_seed(2**40, step, env, play) < HELDOUT_SEED_BASE
    assert heldout_seed(0) == HELDOUT_SEED_BASE
    assert heldout_seed(0, "dev") > heldout_seed(2**20 - 1, "test")
    with pytest.raises(SuiteError, match="split"):
        heldout_seed(0, "train")


async def test_games_suite_pairs_a_correct_policy_against_a_wrong_one(env_folder: Path) -> None:
    engine = ScriptedEngine()
    engine.policies["agent"] = versioned(engine, {0: wrong_policy, 1: echo_policy, 2: wrong_policy})
    suite = build_suite(f"envs:{env_folder}", {"episodes": 12})
    models = [ModelSpec(BASE), ModelSpec("good", "/adapters/good"), ModelSpec("same", "/adapters/same")]
    async with await SandboxPool.start(config().sandbox) as pool:
        table, seconds = await evaluate(engine, pool, config(), [suite], models, concurrency=4)
    assert engine.loaded == [(1, "/adapters/good"), (2, "/adapters/same")]
    assert set(seconds) == {"base", "good", "same"}
    scores = table[0].scores
    assert [s.solved for s in scores["base"]] == [False] * 12
    assert [s.solved for s in scores["good"]] == [True] * 12
    assert all(s.error is None for s in scores["good"])
    rows = {(r.model, r.task, r.metric): r for r in summarise(table, models)}
    good = rows[("good", ALL_TASKS, "win_rate")]
    assert (good.n, good.base_mean, good.mean, good.delta, good.low, good.high) == (12, 0.0, 1.0, 1.0, 1.0, 1.0)
    same = rows[("same", ALL_TASKS, "return")]
    assert (same.delta, same.low, same.high) == (0.0, 0.0, 0.0)
    base = rows[("base", "echo", "win_rate")]
    assert base.delta is None and base.mean == 0.0 and base.n == 12


async def test_games_suite_on_a_half_right_policy_has_an_interval_around_the_gain(env_folder: Path) -> None:
    engine = ScriptedEngine(seed=3)
    coin = lambda prompt, rng: echo_policy(prompt, rng) if rng.random() < 0.5 else "\\boxed{zzz}"  # noqa: E731
    engine.policies["agent"] = versioned(engine, {0: wrong_policy, 1: coin})
    suite = build_suite(f"envs:{env_folder}", {"episodes": 40})
    models = [ModelSpec(BASE), ModelSpec("coin", "/a")]
    async with await SandboxPool.start(config().sandbox) as pool:
        table, _ = await evaluate(engine, pool, config(), [suite], models, concurrency=8)
    row = next(
        r for r in summarise(table, models) if r.model == "coin" and r.metric == "win_rate" and r.task == ALL_TASKS
    )
    assert 0.2 < row.delta < 0.8
    assert row.low < row.delta < row.high
    assert row.low > 0.0  # 40 pairs, ~half flipped to a win: clearly above 0
    assert row.high - row.low < 0.45


async def test_reasoning_gym_scored_by_its_own_score_answer() -> None:
    suite = ReasoningGymSuite(["arithmetic", "algorithmic"], size=3)
    answers = {suite.question(item)["question"]: suite.question(item)["answer"] for item in suite.items()}

    def right(prompt: str, rng: object) -> str:
        question = next(q for q in answers if q in prompt)
        return f"Let me think. <answer>{answers[question]}</answer>"

    engine = ScriptedEngine()
    engine.policies["eval"] = versioned(engine, {0: lambda p, r: "<answer>I do not know</answer>", 1: right})
    models = [ModelSpec(BASE), ModelSpec("right", "/a")]
    table, _ = await evaluate(engine, None, config(), [suite], models)
    rows = {(r.model, r.task, r.metric): r for r in summarise(table, models)}
    assert len(suite.items()) == 12  # 4 datasets x 3
    assert rows[("right", ALL_TASKS, "solved")].mean == 1.0
    assert rows[("right", ALL_TASKS, "solved")].base_mean == 0.0
    assert rows[("right", "arithmetic/chain_sum", "score")].delta == 1.0
    assert rows[("base", ALL_TASKS, "score")].mean < 0.05  # some datasets give a little credit for any answer


def test_reasoning_gym_items_are_fixed() -> None:
    a, b = ReasoningGymSuite(["logic"], size=4), ReasoningGymSuite(["logic"], size=4)
    assert [a.question(i)["question"] for i in a.items()] == [b.question(i)["question"] for i in b.items()]


def test_unknown_suite_family_or_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="unknown suite 'gpqa'"):
        build_suite("gpqa")
    with pytest.raises(SuiteError, match="unknown family"):
        build_suite("reasoning_gym:poetry")
    with pytest.raises(SuiteError, match="does not exist"):
        build_suite(f"envs:{tmp_path / 'nowhere'}")
    with pytest.raises(SuiteError, match="envs needs a folder"):
        build_suite("envs")


async def test_results_go_into_the_evals_table(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    async with await Store.open(db) as store:
        await store.start_run("r", "", None)
    async with await Store.open(db) as store:  # reopened from outside the run, as `spade-async eval` does
        await store.record_evals(
            [
                {
                    "eval_id": "e1",
                    "model": "good",
                    "suite": "games",
                    "task": "*",
                    "metric": "win_rate",
                    "n": 12,
                    "mean": 1.0,
                    "base_mean": 0.0,
                    "delta": 1.0,
                    "ci_low": 1.0,
                    "ci_high": 1.0,
                    "n_errors": 0,
                    "step": 3,
                    "adapter": "/a",
                    "seconds": 2.5,
                }
            ]
        )
        rows = await store.evals()
    assert rows[0]["run_id"] == 1 and rows[0]["delta"] == 1.0 and rows[0]["step"] == 3
    with sqlite3.connect(db) as conn:
        assert "0003_evals" in {r[0] for r in conn.execute("SELECT name FROM _migrations")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a RUN_DIR"),
        (["{tmp}/missing"], "no such run folder"),
        (["{tmp}"], "not a spade-async run folder"),
        (["{run}", "--step", "7"], "has no checkpoint"),
        (["{run}", "--adapter", "{tmp}/none"], "no such folder"),
        (["{run}", "--adapter", "{tmp}"], "no PEFT adapter here"),
        (["{run}", "--suite", "gpqa"], "unknown suite"),
    ],
)
def test_eval_cli_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.toml").write_text('[run]\ndevice = "cpu"\n')
    argv = ["eval", *(a.format(tmp=tmp_path, run=run) for a in args)]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
