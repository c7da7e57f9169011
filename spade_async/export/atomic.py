"""Where an export may write, and writing it whole or not at all.

Why: ``export ... OUT --force`` used to ``rmtree(OUT)`` first, whatever OUT was: the run
folder itself, its ``checkpoints/``, a home folder. Now an output is refused before anything
is touched when it could hold or be part of a run (:func:`spade_async.memory.run_dir.refuse_output`),
``--force`` replaces only an earlier export of the same kind (its manifest file says so), and
the new folder (or file) is written beside OUT under a temporary name and renamed into place:
an interrupted export leaves the old OUT as it was, never half of a new one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spade_async.memory.run_dir import RunDirError, refuse_output
from spade_async.util.errors import UserError


class ExportError(UserError):
    """An export that cannot be done as asked; the message says why and what to do."""

    exit_code = 2  # bad input, like a usage error


def check_out(out: Path, run_dir: Path | None, *, force: bool, marker: str | None) -> None:
    """Refuse ``out`` before anything is written: inside or holding a run, a link, a file where a
    folder is asked (``marker`` given) or a folder where a file is, or in the way without
    ``--force``, or (with it) not an earlier export (no ``marker`` file in it)."""
    try:
        refuse_output(out, run_dir)
    except RunDirError as exc:
        raise ExportError(str(exc)) from None
    if out.is_symlink():
        raise ExportError(f"{out} is a symbolic link; name a real {'folder' if marker else 'file'} to write")
    if not out.exists():
        return
    if marker is None:
        if out.is_dir():
            raise ExportError(f"{out} is a folder; name a file to write")
        if not force:
            raise ExportError(f"{out} exists; pass --force to replace it")
        return
    if not out.is_dir():
        raise ExportError(f"{out} is a file; name a folder to write")
    if not any(out.iterdir()):
        return
    if not force:
        raise ExportError(f"{out} exists and is not empty; choose another folder or pass --force")
    if not (out / marker).is_file():
        raise ExportError(
            f"{out} is not an earlier export (no {marker} in it): --force replaces only those; choose another folder"
        )


@contextmanager
def folder_written_whole(out: Path) -> Iterator[Path]:
    """A temporary folder beside ``out`` to write into; on success it replaces ``out``
    (checked with :func:`check_out` first), on failure it is removed and ``out`` is untouched."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    except OSError as exc:
        raise ExportError(f"cannot write beside {out} ({exc.strerror or exc})") from None
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    moved = False
    try:
        yield tmp
        if out.exists():
            os.rename(out, old)
            moved = True
        os.rename(tmp, out)
    except BaseException:
        if moved and not out.exists():
            os.rename(old, out)  # the earlier export back in place
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_file_whole(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` through a temporary file beside it and a rename."""
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ExportError(f"cannot write {out} ({exc.strerror or exc})") from None
