"""``spade-async tui RUN_DIR``: open the monitor on an existing run directory.

Why a plain function returning an exit code: the project's CLI registers it as a
subcommand, and ``python -m tui RUN_DIR`` uses it too; a wrong path is a user error, so it
is reported in one line, never as a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .db import DB_FILENAME


def resolve_db(run_dir: Path) -> Path | str:
    """The run's database path, or a message saying what is missing."""
    if not run_dir.exists():
        return f"no such run directory: {run_dir}"
    if not run_dir.is_dir():
        return f"not a directory: {run_dir} (expected a run directory holding {DB_FILENAME})"
    db = run_dir / DB_FILENAME
    if not db.is_file():
        return f"no run database in {run_dir} (expected {db}); has the run started?"
    return db


def run_tui(run_dir: Path) -> int:
    """Watch the run in ``run_dir`` until the user quits; returns a process exit code."""
    db = resolve_db(Path(run_dir))
    if isinstance(db, str):
        print(f"error: {db}", file=sys.stderr)  # the style of every spade-async command
        return 2
    from .app import SpadeApp  # imported here so a bad path fails fast

    result = SpadeApp(db).run()
    return result or 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m tui RUN_DIR", file=sys.stderr)
        return 2
    return run_tui(Path(args[0]))
