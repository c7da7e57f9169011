"""The ``lm_eval:TASKS`` suite for real: lm-evaluation-harness's own ``evaluate`` on two local
tasks (tests/fixtures/lm_eval_task: a generate_until sum and a multiple_choice product, JSONL
next to their YAML), the tiny random model with a real LoRA adapter, offline throughout.

What must hold: both models answer the same documents (same doc id, same document hash, in
the order of the suite's items, whatever order they are asked in); the delta and its interval
are the paired bootstrap of those per-item scores; the CLI stores the rows, caches the base,
and ``spade-async report`` shows them; and a missing lm-eval, an unknown task or a data set
that needs a download each stop with one line naming the task, exit status 2.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.eval.suites import build_suite
from spade_async.eval.suites.lm_eval_suite import LmEvalSuite
from spade_async.eval.suites.lm_eval_tasks import LmEvalError
from tests.integration.runs import tiny_adapter_run

needs_lm_eval = pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None, reason="lm-eval not installed")
TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_task"
SUITE = f"lm_eval:{TASKS}"
N_DOCS = 12  # per task (arithmetic.jsonl, choice.jsonl)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hub: the environment for anything started from here, and the flags the already
    imported libraries read."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    return tiny_adapter_run(tmp_path_factory.mktemp("lm_eval"), tiny_model_dir)


@needs_lm_eval
@pytest.mark.slow
def test_both_models_score_the_same_documents_and_the_interval_pairs_them(run: Path) -> None:
    from spade_async.config import load_config
    from spade_async.engine.embedded import resolve_model_path
    from spade_async.eval.models import resolve_models
    from spade_async.eval.runner import evaluate, summarise
    from spade_async.eval.stats import paired_bootstrap
    from spade_async.eval.suites import EvalContext
    from spade_async.run.assemble import build_engine, preflight

    cfg = load_config(run / "config.toml", [])
    suite = build_suite(SUITE)
    assert isinstance(suite, LmEvalSuite)
    items = suite.items()
    assert [item.key for item in items] == [f"{task}#{i}" for task in suite.tasks for i in range(N_DOCS)]
    assert set(suite.tasks) == {"spade_tiny_arith", "spade_tiny_choice"}
    models = resolve_models(run, (), ("last",))
    engine = build_engine(cfg, resolve_model_path(cfg.model.name), preflight(cfg))

    async def go() -> tuple[Any, Any]:
        table, _ = await evaluate(engine, None, cfg, [suite], models)
        # Asked in reverse order, each score still lands on its own document (matched by doc id).
        reverse = await suite.score_items(EvalContext(engine, None, cfg), items[::-1])
        return table, reverse

    try:
        table, reverse = anyio.run(go)
    finally:
        anyio.run(engine.aclose)
    base, adapter = (table[0].scores[m.label] for m in models)
    answers = {
        "spade_tiny_arith": [json.loads(line)["answer"] for line in (TASKS / "arithmetic.jsonl").open()],
        "spade_tiny_choice": [str(json.loads(line)["answer"]) for line in (TASKS / "choice.jsonl").open()],
    }
    for item, b, a, r in zip(items, base, adapter, reverse[::-1], strict=True):
        task, doc_id = item.payload
        assert b.error is None and a.error is None, (b.error, a.error)
        assert b.detail["doc_id"] == a.detail["doc_id"] == r.detail["doc_id"] == doc_id
        assert b.detail["doc_hash"] == a.detail["doc_hash"] == r.detail["doc_hash"]
        assert b.detail["target"] == a.detail["target"] == r.detail["target"] == answers[task][doc_id]
        assert b.detail["metric"] == a.detail["metric"] == ("exact_match" if task == "spade_tiny_arith" else "acc")
    assert sum(s.score for s in adapter) != sum(s.score for s in base)  # the adapter changes answers
    rows = summarise(table, models)
    pooled = next(r for r in rows if r.model == models[1].label and r.task == "*" and r.metric == "score")
    expected = paired_bootstrap([s.score for s in base], [s.score for s in adapter])
    assert pooled.n == 2 * N_DOCS and pooled.n_errors == 0
    assert (pooled.delta, pooled.low, pooled.high) == pytest.approx((expected.delta, expected.low, expected.high))
    assert pooled.low is not None and pooled.high is not None and pooled.delta is not None
    assert not math.isnan(pooled.low) and pooled.low <= pooled.delta <= pooled.high


@needs_lm_eval
@pytest.mark.slow
def test_cli_eval_stores_caches_and_report_shows_the_numbers(run: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", str(run), "--suite", SUITE, "--lm-eval-limit", "8", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    name = "lm_eval:spade_tiny_arith,spade_tiny_choice"
    assert payload["suites"] == [name]
    adapter = [r for r in payload["results"] if r["model"] == "step_2"]
    pooled = next(r for r in adapter if r["task"] == "*" and r["metric"] == "score")
    assert pooled["n"] == 16 and pooled["step"] == 2  # --lm-eval-limit 8: the first 8 documents of each task
    assert pooled["delta"] == pytest.approx(pooled["mean"] - pooled["base_mean"])
    assert pooled["low"] <= pooled["delta"] <= pooled["high"]
    assert {r["task"] for r in adapter} == {"*", "spade_tiny_arith", "spade_tiny_choice"}
    with sqlite3.connect(run / "run.sqlite") as conn:
        stored = conn.execute(
            "SELECT delta, ci_low, ci_high FROM evals WHERE suite = ? AND model = 'step_2' AND task = '*' "
            "AND metric = 'score'",
            (name,),
        ).fetchall()
    assert stored == [(pytest.approx(pooled["delta"]), pytest.approx(pooled["low"]), pytest.approx(pooled["high"]))]
    cached = [json.loads(p.read_text()) for p in (run / "eval" / "base_cache").glob("*.json")]
    entry = next(c for c in cached if c["key"]["suite"] == name)
    assert entry["key"]["items"] == [f"{t}#{i}" for t in ("spade_tiny_arith", "spade_tiny_choice") for i in range(8)]
    assert [s[3]["doc_id"] for s in entry["scores"]] == list(range(8)) * 2

    again = runner.invoke(cli, ["eval", str(run), "--suite", SUITE, "--lm-eval-limit", "8", "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout[again.stdout.index("{") :])["timing"]["base_cached"] == [name]

    report = runner.invoke(cli, ["report", str(run)])
    assert report.exit_code == 0, report.output
    text = (run / "report" / "report.md").read_text()
    interval = f"[{pooled['low']:+.3f}, {pooled['high']:+.3f}]"
    assert f"| step_2 | {name} | score | 16 | {pooled['base_mean']:.3f} | {pooled['mean']:.3f} | " in text
    assert f"{pooled['delta']:+.3f} | {interval} |" in text
    for task in ("spade_tiny_arith", "spade_tiny_choice"):
        row = next(r for r in adapter if r["task"] == task and r["metric"] == "score")
        assert f"| step_2 | {name} | {task} | score | 8 | {row['base_mean']:.3f} | {row['mean']:.3f} | " in text


def _cli_error(run: Path, suite: str) -> str:
    result = CliRunner().invoke(cli, ["eval", str(run), "--suite", suite])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_without_lm_eval_the_suite_says_how_to_install_it(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # `import lm_eval` raises ImportError
    with pytest.raises(LmEvalError, match=r"lm_eval:gsm8k needs lm-evaluation-harness.*pip install"):
        build_suite("lm_eval:gsm8k")
    line = _cli_error(run, "lm_eval:paper")
    assert "lm_eval:paper" in line and "spade-async[eval]" in line


@needs_lm_eval
def test_an_unknown_task_is_named_with_the_nearest_names(run: Path) -> None:
    line = _cli_error(run, "lm_eval:gsm8kk")
    assert "unknown task 'gsm8kk'" in line and "gsm8k" in line.split("did you mean", 1)[1]
    # Every name of the paper preset is a task of the installed lm-eval (docs/lm_eval.md maps them).
    from spade_async.eval.suites.lm_eval_tasks import PRESETS, lm_eval_index

    assert set(PRESETS["paper"]) <= set(lm_eval_index().all_tasks)


@needs_lm_eval
def test_a_task_whose_data_must_be_downloaded_is_named(run: Path, tmp_path: Path) -> None:
    task = tmp_path / "hub_task.yaml"
    task.write_text(
        (TASKS / "spade_tiny_choice.yaml")
        .read_text()
        .replace("task: spade_tiny_choice", "task: spade_hub_only")
        .replace("dataset_path: json", "dataset_path: spade-async-tests/not-on-this-machine")
        .replace("dataset_kwargs:\n  data_files:\n    test: choice.jsonl\n", "")
    )
    line = _cli_error(run, f"lm_eval:{task}")
    assert "task spade_hub_only could not load its data set" in line and "download" in line
    missing = _cli_error(run, f"lm_eval:{tmp_path / 'nothing_here.yaml'}")
    assert "no such task file or folder" in missing


@needs_lm_eval
def test_the_training_loop_refuses_an_lm_eval_suite(run: Path) -> None:
    """In-loop evaluation scores item by item beside training; lm-eval drives the model alone."""
    from spade_async.config import ConfigError, load_config
    from spade_async.eval.inloop import InLoopEval

    cfg = load_config(run / "config.toml", ["eval.every=1", f'eval.suite="{SUITE}"'])
    none: Any = None
    with pytest.raises(ConfigError, match=r"eval.suite: lm_eval:spade_tiny_arith,spade_tiny_choice runs only in"):
        InLoopEval(cfg, engine=none, pool=none, store=none, run_dir=run, report=print, sinks=list)
