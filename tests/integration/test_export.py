"""Exports: a PEFT folder, a merged model equal to base + adapter, and an environment folder
that gymnasium makes and another run plays as its fixed pool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.export.envs import EnvFilters, select_envs
from tests.integration.runs import pipeline_run, tiny_adapter_run
from tests.integration.test_pipeline import make_config, rows

pytestmark = pytest.mark.slow


def test_merged_export_gives_the_logits_of_base_plus_adapter(tmp_path: Path, tiny_model_dir: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = tiny_adapter_run(tmp_path, tiny_model_dir)
    out = tmp_path / "merged"
    result = CliRunner().invoke(cli, ["export", "adapter", str(run), str(out), "--merge"])
    assert result.exit_code == 0, result.output
    assert "merged model of step 2" in result.output
    merged = AutoModelForCausalLM.from_pretrained(str(out))  # transformers alone
    tok = AutoTokenizer.from_pretrained(str(out))
    ids = torch.tensor([tok.encode("The knight moves to \\boxed{e4}")])
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    reference = PeftModel.from_pretrained(base, str(run / "checkpoints" / "step_2" / "adapter"))
    with torch.no_grad():
        want = reference(ids).logits
        got = merged(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))(ids).logits
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(got, plain, atol=1e-3)  # the adapter really changes the model
    assert json.loads((out / "spade_export.json").read_text())["merged"] is True


def test_peft_export_and_bad_input(tmp_path: Path, tiny_model_dir: Path) -> None:
    from peft import PeftConfig

    run = tiny_adapter_run(tmp_path, tiny_model_dir)
    out = tmp_path / "peft"
    assert CliRunner().invoke(cli, ["export", "adapter", str(run), str(out)]).exit_code == 0
    assert PeftConfig.from_pretrained(str(out)).r == 4
    again = CliRunner().invoke(cli, ["export", "adapter", str(run), str(out)])
    assert again.exit_code == 2 and "not empty" in again.output and "--force" in again.output
    missing = CliRunner().invoke(cli, ["export", "adapter", str(run), str(tmp_path / "x"), "--step", "9"])
    assert missing.exit_code == 2 and "available: 2" in missing.output
    not_run = CliRunner().invoke(cli, ["export", "envs", str(tmp_path), str(tmp_path / "y")])
    assert not_run.exit_code == 2 and "not a spade-async run folder" in not_run.output
    assert "Traceback" not in missing.output + not_run.output


def test_exported_envs_register_with_gymnasium_and_run_as_a_fixed_pool(tmp_path: Path) -> None:
    run = pipeline_run(tmp_path / "a")
    chosen = select_envs(run / "run.sqlite", EnvFilters())
    assert chosen and all("WeightedCoin" in r["code"] for r in chosen)  # the broken design was not admitted
    assert select_envs(run / "run.sqlite", EnvFilters(min_win_rate=1.01)) == []
    out = tmp_path / "coin_envs"
    result = CliRunner().invoke(cli, ["export", "envs", str(run), str(out), "--top", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())["envs"]
    assert len(manifest) == 1 and (out / manifest[0]["file"]).read_text() == chosen[0]["code"]
    assert manifest[0]["origin"] != "seed" and manifest[0]["win_rate"] == chosen[0]["win_rate"]
    gym_id = manifest[0]["gym_id"]

    sys.path.insert(0, str(tmp_path))
    try:
        __import__("coin_envs")
    finally:
        sys.path.remove(str(tmp_path))
    env = gymnasium.make(gym_id)
    try:
        obs, _ = env.reset(seed=5)
        assert "Call the flip" in obs
        _, reward, terminated, _, _ = env.step("\\boxed{heads}")
        assert terminated and reward in (0.0, 1.0)
    finally:
        env.close()

    # The folder is another run's fixed pool.
    import anyio

    from spade_async.run.assemble import open_run
    from spade_async.testing import ScriptedEngine, ScriptedLearner

    (tmp_path / "b").mkdir()
    cfg = make_config(tmp_path / "b", mode="fixed", envs_per_step=1, fixed_pool=str(out))
    cfg.run.max_steps = 1

    async def go() -> None:
        async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
            assert await p.run(sync=True) == 1

    anyio.run(go)
    played = rows(
        Path(cfg.run.run_dir) / "run.sqlite",
        "SELECT DISTINCT e.code FROM episodes p JOIN environments e ON e.id = p.env_id",
    )
    assert [c for (c,) in played] == [(out / manifest[0]["file"]).read_text()]


def test_exported_folder_registers_in_a_fresh_interpreter(tmp_path: Path) -> None:
    run = pipeline_run(tmp_path / "a")
    out = tmp_path / "my_envs"
    assert CliRunner().invoke(cli, ["export", "envs", str(run), str(out)]).exit_code == 0
    gym_id = json.loads((out / "manifest.json").read_text())["envs"][0]["gym_id"]
    code = (
        f"import gymnasium; env = gymnasium.make('my_envs:{gym_id}'); obs, _ = env.reset(seed=1); "
        "print(obs); env.close()"
    )
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path.cwd())])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Call the flip" in done.stdout
