"""`spade-async eval` for real: the tiny random model, a real LoRA adapter in a run folder,
the real sandbox and reasoning-gym, results in the run's database and as JSON."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from tests.integration.runs import tiny_adapter_run

pytestmark = pytest.mark.slow


def test_eval_cli_scores_base_and_checkpoint_adapter(tmp_path: Path, tiny_model_dir: Path) -> None:
    run = tiny_adapter_run(tmp_path, tiny_model_dir)
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            str(run),
            "--suite",
            "games:easy",
            "--episodes",
            "1",
            "--suite",
            "reasoning_gym:logic",
            "--rg-size",
            "2",
            "--rg-max-new-tokens",
            "8",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["suites"] == ["games:easy", "reasoning_gym:logic"]
    rows = payload["results"]
    adapter = [r for r in rows if r["model"] == "step_2"]
    assert {r["suite"] for r in adapter} == {"games:easy", "reasoning_gym:logic"}
    games_all = next(r for r in adapter if r["suite"] == "games:easy" and r["task"] == "*" and r["metric"] == "return")
    assert games_all["n"] + games_all["n_errors"] == 6  # six easy games, one held-out episode each
    assert games_all["step"] == 2 and games_all["delta"] == games_all["mean"] - games_all["base_mean"]
    assert games_all["low"] <= games_all["delta"] <= games_all["high"]
    with sqlite3.connect(run / "run.sqlite") as conn:
        stored = conn.execute("SELECT COUNT(*), COUNT(DISTINCT eval_id), MAX(run_id) FROM evals").fetchone()
    assert stored == (len(rows), 1, 1)
    # The run logs to TensorBoard, so the figures are there too, at the checkpoint's step.
    from tests.integration.test_tracking import load_scalars

    scalars = load_scalars(run / "tensorboard")
    assert scalars["eval/step_2/games:easy/return_delta"] == [(2, pytest.approx(games_all["delta"]))]
