"""`engine.merge_lora` is refused where a run would train on samples from bf16-merged adapters.

Why: rounded into bf16 weights, one learner step's change of the adapter mostly vanishes
(docs/cpu_speed.md item 17: 80.6% of merged weights unchanged between two consecutive
adapters), so a run with it
samples from a policy that lags the one it trains. An evaluation of a fixed adapter may merge.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.config import load_config
from spade_async.config.presets import resolve_config
from spade_async.run.assemble import preflight
from spade_async.run.errors import RunError


def tiny(dtype: str, merge: bool = True):  # type: ignore[no-untyped-def]
    return load_config(resolve_config("tiny"), [f"engine.merge_lora={str(merge).lower()}", f'model.dtype="{dtype}"'])


def test_a_run_with_adapters_merged_into_bf16_weights_is_refused_with_the_fix() -> None:
    with pytest.raises(RunError, match=r"engine\.merge_lora = true with a bfloat16 engine.*engine\.merge_lora = false"):
        preflight(tiny("bfloat16"), gpu_count=0)


def test_float32_an_evaluation_or_the_switch_off_pass() -> None:
    preflight(tiny("float32"), gpu_count=0)  # float32 holds a step's change
    preflight(tiny("bfloat16"), gpu_count=0, trains_on_samples=False)  # a fixed adapter
    preflight(tiny("bfloat16", merge=False), gpu_count=0)


def test_the_run_command_refuses_it_before_writing_anything(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "tiny",
            "--headless",
            "--set",
            "engine.merge_lora=true",
            "--set",
            'model.dtype="bfloat16"',
            "--set",
            f'run.run_dir="{run_dir}"',
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output  # as every preflight refusal (a GPU setting without a GPU)
    assert "engine.merge_lora = true with a bfloat16 engine" in result.output
    assert "Traceback" not in result.output
    assert not run_dir.exists()
