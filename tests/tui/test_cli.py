"""run_tui: a wrong run directory is one clear line on stderr and exit code 2, no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tui.fixture_db import build_fixture_db
from tui.cli import main, resolve_db, run_tui


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p / "missing", "no such run directory"),
        (lambda p: (p / "file.txt", (p / "file.txt").write_text("x"))[0], "not a directory"),
        (lambda p: p, "no run database"),
    ],
    ids=["missing", "file", "no-db"],
)
def test_bad_run_dir_is_reported_without_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], Path],
    expected: str,
) -> None:
    assert run_tui(make(tmp_path)) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_resolve_db_finds_the_run_database(tmp_path: Path) -> None:
    db = build_fixture_db(tmp_path / "run.sqlite")
    assert resolve_db(tmp_path) == db


def test_main_without_arguments_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
