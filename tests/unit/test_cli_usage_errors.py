"""Click's own usage errors (an unknown option, a missing argument, a bad value, an option
without its value, an unknown command) print one line in the project's style on stderr,
``error: ... (spade-async CMD --help ...)``, and exit 2, for every command: one handler at the
top-level group (spade_async/cli/usage.py). ``--help`` and a bare group's help stay
click's own."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]

# (argv, texts the line must hold, the command whose --help it points to)
CASES = [
    (["--foo"], ["no such option", "'--foo'"], "spade-async"),
    (["run", "tiny", "--foo"], ["no such option", "'--foo'", "did you mean '--force'?"], "spade-async run"),
    (["run", "tiny", "--max-steps", "0"], ["invalid value for '--max-steps'", "0"], "spade-async run"),
    (["run"], ["missing argument 'CONFIG'"], "spade-async run"),
    (["run", "tiny", "extra"], ["unexpected extra argument", "extra"], "spade-async run"),
    (["resume", "runs/x", "--bogus"], ["no such option", "'--bogus'"], "spade-async resume"),
    (["eval", "--episodes", "abc"], ["invalid value for '--episodes'", "'abc'"], "spade-async eval"),
    (["eval", "runs/x", "--episodes"], ["'--episodes' requires an argument"], "spade-async eval"),
    (["eval", "--split", "nope"], ["invalid value for '--split'", "'nope'", "'test'"], "spade-async eval"),
    (["report", "runs/x", "--nope"], ["no such option", "'--nope'"], "spade-async report"),
    (["tui"], ["missing argument 'RUN_DIR'"], "spade-async tui"),
    (["export", "adapter"], ["missing argument 'RUN_DIR'"], "spade-async export adapter"),
    (
        ["export", "envs", "runs/x", "out", "--sort", "best"],
        ["invalid value for '--sort'", "'best'"],
        "spade-async export envs",
    ),
    (["config", "show"], ["missing argument 'CONFIG'"], "spade-async config show"),
    (["config", "shw"], ["no such command 'shw'", "did you mean 'show'?"], "spade-async config"),
    (["env", "play", "mastermind", "--seed", "x"], ["invalid value for '--seed'", "'x'"], "spade-async env play"),
    (["steer", "runs/x", "band", "0.1"], ["missing argument 'HIGH'"], "spade-async steer RUN_DIR band"),
    (["evl"], ["no such command 'evl'", "did you mean", "'eval'"], "spade-async"),
    (["setup-model", "--bogus"], ["no such option", "'--bogus'"], "spade-async setup-model"),
    (["--verbose", "eval", "--bogus"], ["no such option", "'--bogus'"], "spade-async eval"),
    (["eval", "--bogus", "--verbose"], ["no such option", "'--bogus'"], "spade-async eval"),
]
IDS = ["_".join(argv).lstrip("-") for argv, _texts, _path in CASES]


def _check_one_line(code: int, out: str, err: str, texts: list[str], path: str) -> None:
    assert code == 2, (out, err)
    assert out == ""
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    for text in texts:
        assert text in err, (text, err)
    assert f"({path} --help " in err, err
    assert "Usage:" not in err and "Try '" not in err and "Error:" not in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "texts", "path"), CASES, ids=IDS)
def test_a_click_usage_error_is_one_line_and_exit_2(argv: list[str], texts: list[str], path: str) -> None:
    result = CliRunner().invoke(cli, argv, prog_name="spade-async")
    _check_one_line(result.exit_code, result.stdout, result.stderr, texts, path)


def test_the_message_reads_as_the_projects_style() -> None:
    result = CliRunner().invoke(cli, ["run", "tiny", "--foo"], prog_name="spade-async")
    assert (
        result.stderr
        == "error: no such option '--foo'; did you mean '--force'? (spade-async run --help lists the options)\n"
    )
    result = CliRunner().invoke(cli, ["export", "adapter"], prog_name="spade-async")
    assert result.stderr == "error: missing argument 'RUN_DIR' (spade-async export adapter --help shows the usage)\n"


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["export", "adapter", "-h"], ["config", "--help"]])
def test_help_is_still_clicks_help(argv: list[str]) -> None:
    result = CliRunner().invoke(cli, argv, prog_name="spade-async")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.startswith("Usage: spade-async") and "Options:" in result.stdout


def test_a_group_without_its_subcommand_still_shows_its_help() -> None:
    result = CliRunner().invoke(cli, ["config"], prog_name="spade-async")
    assert "Usage: spade-async config [OPTIONS] COMMAND [ARGS]..." in result.output
    assert "Commands:" in result.output and "error:" not in result.output


def test_the_installed_console_command_prints_one_line() -> None:
    """The real process behind `spade-async` (pyproject's [project.scripts] entry point; the
    venv's own script when installed): what reaches the terminal is one line and status 2."""
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["spade-async"]
    module, func = target.split(":")
    script = Path(sys.executable).parent / "spade-async"
    if script.is_file():
        argv = [str(script)]
    else:  # not installed: what the installed script runs
        argv = [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    done = subprocess.run(
        [*argv, "eval", "--episodes", "abc"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    _check_one_line(
        done.returncode, done.stdout, done.stderr, ["invalid value for '--episodes'", "'abc'"], "spade-async eval"
    )
