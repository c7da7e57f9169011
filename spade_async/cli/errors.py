"""One error style for every command: ``error: <what, and what to do>`` on stderr, one line.

Why: commands had grown three styles for the same mistake (click's ``Error: ...`` with exit 1,
``spade-async tui: ...`` with exit 2, ``error: ...`` with exit 2). Now bad input from the
user (a missing or wrong run folder, a ``--step`` that does not exist, an unknown suite, an
output folder in the way) is a :class:`UsageProblem`: exit status 2, like click's own usage
errors and a bad config. A command that started and could not finish (a missing model, the
sandbox refusing to start) is a :class:`CommandFailed`: exit status 1.
"""

from __future__ import annotations

import json
import sqlite3
import tomllib
from pathlib import Path
from typing import IO, Any

import click

from spade_async.memory.run_dir import CONFIG_NAME, RunDir
from spade_async.util.steps import DB_NAME

EXIT_USAGE = 2
EXIT_FAILED = 1
DB_FILE = DB_NAME
CONFIG_FILE = CONFIG_NAME
_WHY_MISSING = {DB_FILE: "has the run started?", CONFIG_FILE: "a run folder holds the config it was started with"}


class CommandFailed(click.ClickException):
    """The command ran into something it cannot get past: ``error: ...``, exit status 1."""

    exit_code = EXIT_FAILED

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class UsageProblem(CommandFailed):
    """Bad input from the user: ``error: ...``, exit status 2."""

    exit_code = EXIT_USAGE


def run_folder(path: str | Path, *needs: str) -> Path:
    """``path`` as a run folder holding the files in ``needs`` (e.g. ``run.sqlite``), or a
    :class:`UsageProblem` saying which part is wrong."""
    run = Path(path)
    if not run.exists():
        raise UsageProblem(f"no such run folder: {path}")
    if not run.is_dir():
        raise UsageProblem(f"not a folder: {path} (a run folder holds {' and '.join(needs) or DB_FILE})")
    missing = [name for name in needs if not (run / name).is_file()]
    if missing:
        why = "; ".join(_WHY_MISSING[m] for m in missing if m in _WHY_MISSING)
        raise UsageProblem(
            f"{path} is not a spade-async run folder (no {' or '.join(missing)}){'; ' + why if why else ''}"
        )
    if DB_FILE in needs:
        RunDir(run).check_database()  # a damaged database: one line, and no file of the folder touched
    return run


USER_FILE_ERRORS: tuple[type[BaseException], ...] = (
    sqlite3.Error,
    OSError,
    UnicodeDecodeError,
    RecursionError,
    json.JSONDecodeError,
    tomllib.TOMLDecodeError,
)
"""What a user's file (a damaged database, an unreadable folder, a file that is not UTF-8, a
config or JSON nested too deep or malformed) raises from anywhere in a command: the top-level
group turns each into one line and exit status 2 (``--verbose`` keeps the traceback)."""


def describe_file_error(exc: BaseException) -> str:
    """One line for an error of :data:`USER_FILE_ERRORS`, naming the file where it is known."""
    if isinstance(exc, sqlite3.Error):
        return f"a run database cannot be read ({exc}); nothing was changed: restore it from a backup"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, RecursionError):
        return "an input nests too deeply to read (a TOML or JSON file, or a --set value)"
    if isinstance(exc, json.JSONDecodeError):
        return f"a JSON file cannot be read ({exc})"
    return f"a TOML file cannot be read ({exc})"
