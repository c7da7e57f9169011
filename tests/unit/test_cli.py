"""CLI: help, version, config show, and bad input as exit status + one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from spade_async import __version__
from spade_async.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help_lists_commands() -> None:
    out = invoke("--help").output
    for command in ("run", "resume", "config", "tui", "env"):
        assert command in out


def test_version() -> None:
    assert __version__ in invoke("--version").output


def test_config_show_prints_resolved_paper_recipe() -> None:
    result = invoke("config", "show", str(ROOT / "configs" / "games.toml"))
    assert result.exit_code == 0
    assert "plays = 16" in result.output and "hinted_plays = 16" in result.output
    assert "envs_per_step = 24" in result.output and "max_steps = 400" in result.output


def test_config_show_with_override() -> None:
    result = invoke("config", "show", str(ROOT / "configs" / "tiny.toml"), "--set", "run.max_steps=3")
    assert "max_steps = 3" in result.output


def test_typo_exits_2_with_key_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[selfplay]\nplayz = 3\n")
    result = invoke("config", "show", str(bad))
    assert result.exit_code == 2
    assert "selfplay.playz: unknown key; did you mean 'plays'?" in result.output
    assert "Traceback" not in result.output


def test_run_with_bad_config_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\nmax_steps = 0\n")
    result = invoke("run", str(bad), "--headless")
    assert result.exit_code == 2
    assert "run.max_steps: Input should be greater than 0" in result.output


def test_resume_of_a_non_run_folder(tmp_path: Path) -> None:
    result = invoke("resume", str(tmp_path), "--headless")
    assert result.exit_code == 2
    assert "not a spade-async run folder" in result.output


def test_gpu_preset_on_a_cpu_machine_says_what_to_do(tmp_path: Path) -> None:
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the preset is valid here")
    run_dir = tmp_path / "run"
    result = invoke("run", str(ROOT / "configs" / "games.toml"), "--headless", "--set", f'run.run_dir="{run_dir}"')
    assert result.exit_code == 1
    assert "needs a CUDA GPU and none is visible" in result.output and "spade-async run tiny" in result.output
    assert not run_dir.exists()  # nothing half-created to trip the next attempt
