"""One error style and exit status for every command that takes a run folder: a missing
folder, a file where a folder should be, and a folder that is not a run all print one line
``error: ...`` on stderr and exit 2 (a usage error), never a traceback. And ``--verbose`` is
read before or after the subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli

RUN_DIR_COMMANDS = [
    ["tui", "{run}"],
    ["report", "{run}"],
    ["eval", "{run}"],
    ["export", "adapter", "{run}", "{tmp}/out"],
    ["export", "envs", "{run}", "{tmp}/out_envs"],
    ["resume", "{run}", "--headless"],
]
IDS = [" ".join(c[:2]).replace(" {run}", "") for c in RUN_DIR_COMMANDS]


def _invoke(argv: list[str], run: Path, tmp: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [a.format(run=run, tmp=tmp) for a in argv])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("argv", RUN_DIR_COMMANDS, ids=IDS)
def test_a_missing_run_folder_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / "no_such_run"
    code, out, err = _invoke(argv, missing, tmp_path)
    assert code == 2, (out, err)
    assert err == f"error: no such run folder: {missing}\n" and out == ""
    assert not missing.exists()


@pytest.mark.parametrize("argv", RUN_DIR_COMMANDS, ids=IDS)
def test_a_folder_that_is_not_a_run_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _invoke(argv, empty, tmp_path)
    assert code == 2, (out, err)
    assert err.startswith(f"error: {empty} is not a spade-async run folder (no ") and err.count("\n") == 1
    assert out == "" and "Traceback" not in err
    assert list(empty.iterdir()) == []  # nothing written into it


@pytest.mark.parametrize("argv", RUN_DIR_COMMANDS, ids=IDS)
def test_a_file_given_as_run_folder_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    code, out, err = _invoke(argv, file, tmp_path)
    assert code == 2, (out, err)
    assert err.startswith(f"error: not a folder: {file}") and err.count("\n") == 1 and out == ""


def test_usage_errors_inside_a_run_folder_share_the_style(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.toml").write_text('[run]\ndevice = "cpu"\n')
    code, _out, err = _invoke(["eval", "{run}", "--step", "3"], run, tmp_path)
    assert code == 2 and err.startswith("error: ") and "has no checkpoint" in err
    code, _out, err = _invoke(["eval", "{run}", "--suite", "gpqa"], run, tmp_path)
    assert code == 2 and err.startswith("error: ") and "unknown suite" in err
    code, _out, err = _invoke(["eval"], run, tmp_path)
    assert code == 2 and err == "error: give a RUN_DIR (a training run folder) or --config CONFIG (base model only)\n"


def test_eval_config_takes_a_preset_name_as_run_does(tmp_path: Path) -> None:
    # A preset by name is read (the command gets as far as the unknown suite) ...
    code, _out, err = _invoke(["eval", "--config", "tiny", "--suite", "gpqa"], tmp_path, tmp_path)
    assert code == 2 and err.startswith("error: ") and "unknown suite" in err and err.count("\n") == 1
    # ... a typo of one is one line naming the preset meant, and a folder is not a config file.
    code, _out, err = _invoke(["eval", "--config", "tinyy"], tmp_path, tmp_path)
    assert code == 2 and err.startswith("error: tinyy: no such config file or preset") and "'tiny'" in err
    assert err.count("\n") == 1
    code, _out, err = _invoke(["eval", "--config", str(tmp_path)], tmp_path, tmp_path)
    assert code == 2 and err == f"error: --config {tmp_path}: not a file\n"


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_is_read_before_or_after_the_subcommand(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spade_async.cli.app as cli_module

    seen: list[bool] = []
    monkeypatch.setattr(cli_module, "quiet_libraries", seen.append)
    monkeypatch.delenv("SPADE_ASYNC_VERBOSE", raising=False)
    argv = ["report", str(tmp_path / "missing")]
    argv = ["--verbose", *argv] if where == "before" else [*argv, "--verbose"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2 and "no such run folder" in result.stderr  # the command itself still ran
    assert seen == [True]
    CliRunner().invoke(cli, ["report", str(tmp_path / "missing")])
    assert seen == [True, False]  # quiet by default


def test_run_on_a_folder_that_does_not_fit_the_request_is_a_usage_error(tmp_path: Path) -> None:
    """``run`` where a run already is (no --resume), and ``run --resume`` where none is: exit 2,
    one line saying what to do, and the folder left as it was."""
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "run.sqlite").write_bytes(b"")
    argv = ["run", "tiny", "--headless", "--set", f'run.run_dir="{taken}"']
    code, out, err = _invoke(argv, taken, tmp_path)
    assert code == 2, (out, err)
    assert err.startswith(f"error: {taken} already holds a run; --resume continues it") and err.count("\n") == 1
    assert sorted(p.name for p in taken.iterdir()) == ["run.sqlite"]
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _invoke(
        ["run", "tiny", "--headless", "--resume", "--set", f'run.run_dir="{empty}"'], empty, tmp_path
    )
    assert code == 2, (out, err)
    assert err == f"error: nothing to resume in {empty} (no run.sqlite); start it without --resume\n"
    assert list(empty.iterdir()) == []
