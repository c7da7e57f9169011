"""`spade-async eval` pays for the base model once per run folder: a second call reuses the
base scores (the base model generates nothing, the output says so), a changed key scores it
again, and the plan with its estimate is printed before anything is loaded. Scripted engine,
real sandbox, the real command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.engine.base import Completion, GenerationRequest
from spade_async.eval.base_cache import CACHE_DIR
from spade_async.testing import ScriptedEngine
from tests.integration.test_eval import ECHO_ENV, echo_policy, wrong_policy


class CountingEngine(ScriptedEngine):
    """Counts the requests each adapter version generated (0 = the base model)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests_by_version: dict[int, int] = {}
        self.policies["agent"] = lambda p, r: (echo_policy if self.adapter_version else wrong_policy)(p, r)

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        v = self.adapter_version
        self.requests_by_version[v] = self.requests_by_version.get(v, 0) + len(requests)
        return await super().generate(requests)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[CountingEngine]]:
    run = tmp_path / "run"
    (run / "checkpoints" / "step_1" / "adapter").mkdir(parents=True)
    (run / "checkpoints" / "step_1" / "adapter" / "adapter_config.json").write_text("{}")
    (run / "config.toml").write_text('[run]\ndevice = "cpu"\n[selfplay]\nmax_turns = 2\n[sandbox]\nmax_children = 8\n')
    envs = tmp_path / "envs"
    envs.mkdir()
    (envs / "echo.py").write_text(ECHO_ENV)
    engines: list[CountingEngine] = []

    def build(*args: Any) -> CountingEngine:
        engines.append(CountingEngine())
        return engines[-1]

    monkeypatch.setattr("spade_async.run.assemble.build_engine", build)
    monkeypatch.setattr("spade_async.engine.embedded.resolve_model_path", lambda name: name)
    return run, envs, engines


def call(run: Path, envs: Path, *extra: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["eval", str(run), "--suite", f"envs:{envs}", "--episodes", "6", "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :]), result.stderr


def headline(payload: dict[str, Any]) -> dict[str, Any]:
    return next(
        r for r in payload["results"] if r["model"] == "step_1" and r["task"] == "*" and r["metric"] == "win_rate"
    )


def test_second_eval_reuses_the_base_scores(run: tuple[Path, Path, list[CountingEngine]]) -> None:
    run_dir, envs, engines = run
    first, err1 = call(run_dir, envs)
    assert engines[0].requests_by_version[0] == 6  # the base model played the 6 episodes
    assert first["timing"]["base_cached"] == []
    assert "base    6 items to score" in err1 and "step_1  6 items to score" in err1
    assert "estimated time: unknown for 12 items" in err1  # nothing measured yet in this folder
    assert len(list((run_dir / CACHE_DIR).glob("*.json"))) == 1

    second, err2 = call(run_dir, envs)
    assert 0 not in engines[1].requests_by_version  # the base model generated nothing
    assert engines[1].requests_by_version[1] == 6 and engines[1].loaded == [
        (1, str(run_dir / "checkpoints/step_1/adapter"))
    ]
    assert second["timing"]["base_cached"] == [f"envs:{envs.name}"]
    assert f"base    0 items to score; cached: envs:{envs.name}" in err2
    assert "estimated time: " in err2 and "(this run folder's earlier evals)" in err2
    for payload in (first, second):  # the same pairing either way: base loses every game, the adapter wins
        row = headline(payload)
        assert (row["n"], row["base_mean"], row["mean"], row["delta"]) == (6, 0.0, 1.0, 1.0)

    third, _ = call(run_dir, envs, "--fresh-base")
    assert engines[2].requests_by_version[0] == 6 and third["timing"]["base_cached"] == []


@pytest.mark.parametrize(
    "change",
    [
        ["--episodes", "5"],  # other items
        ["--set", "engine.agent.temperature=0.5"],  # other sampling
        ["--set", "selfplay.max_turns=3"],  # other episode rules
        ["--set", "engine.max_model_len=3000"],  # other length limit
    ],
)
def test_a_changed_key_scores_the_base_again(run: tuple[Path, Path, list[CountingEngine]], change: list[str]) -> None:
    run_dir, envs, engines = run
    call(run_dir, envs)
    result = CliRunner().invoke(
        cli, ["eval", str(run_dir), "--suite", f"envs:{envs}", "--episodes", "6", "--json", *change]
    )
    assert result.exit_code == 0, result.output
    assert engines[1].requests_by_version.get(0, 0) > 0  # the base model ran again
    assert json.loads(result.stdout[result.stdout.index("{") :])["timing"]["base_cached"] == []
    assert len(list((run_dir / CACHE_DIR).glob("*.json"))) == 2  # one entry per key


def test_a_changed_environment_is_a_changed_key(run: tuple[Path, Path, list[CountingEngine]]) -> None:
    run_dir, envs, engines = run
    call(run_dir, envs)
    (envs / "echo.py").write_text(ECHO_ENV.replace('"Yes."', '"Right."'))
    payload, _ = call(run_dir, envs)
    assert engines[1].requests_by_version.get(0, 0) == 6 and payload["timing"]["base_cached"] == []


def test_a_tampered_cache_entry_is_a_miss(run: tuple[Path, Path, list[CountingEngine]]) -> None:
    run_dir, envs, engines = run
    call(run_dir, envs)
    entry = next((run_dir / CACHE_DIR).glob("*.json"))
    saved = json.loads(entry.read_text())
    saved["key"]["model"] = "someone-else"
    entry.write_text(json.dumps(saved))
    payload, _ = call(run_dir, envs)
    assert engines[1].requests_by_version.get(0, 0) == 6 and payload["timing"]["base_cached"] == []
