"""The run folder's owner (spade_async.memory.run_dir) and the safetensors check, without a run:
which outputs are refused, what a damaged database reads as, the lock within one process,
and a safetensors file cut short. The same guards on a real run, through the CLI, are in
tests/integration/test_bad_inputs.py."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import struct
from pathlib import Path

import pytest

from spade_async.memory.queries import has_checkpoint
from spade_async.memory.run_dir import RunDir, RunDirError, is_run_folder, lock_holder, refuse_output
from spade_async.util.safetensors_check import safetensors_problem


def a_run(root: Path) -> Path:
    run = root / "run"
    (run / "checkpoints" / "step_1").mkdir(parents=True)
    (run / "config.toml").write_text('[run]\nrun_dir = "run"\n')
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("CREATE TABLE runs (id INTEGER)")
        conn.execute("CREATE TABLE checkpoints (step INTEGER)")
        conn.execute("INSERT INTO checkpoints VALUES (0)")
    return run


@pytest.mark.parametrize(
    "where",
    ["{run}", "{run}/checkpoints", "{run}/checkpoints/step_1/x", "{run}/run.sqlite", "{root}", "{root}/other/deep"],
)
def test_outputs_that_touch_a_run_are_refused(tmp_path: Path, where: str) -> None:
    run = a_run(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "run.sqlite").write_bytes(b"")  # another run folder
    with pytest.raises(RunDirError):
        refuse_output(Path(where.format(run=run, root=tmp_path)), run)


def test_an_output_beside_the_run_is_allowed(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    refuse_output(tmp_path / "exports" / "adapter", run)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "config.toml").write_text("x = 1")  # a config alone is not a run
    refuse_output(tmp_path / "proj" / "out", run)
    assert is_run_folder(run) and not is_run_folder(tmp_path / "proj")


def test_a_damaged_database_is_a_problem_and_never_no_checkpoint(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    folder = RunDir(run)
    assert folder.database_problem() is None and folder.has_schema() and has_checkpoint(folder.db)
    folder.db.write_bytes(b"not a database at all" * 100)
    assert "run.sqlite" in (folder.database_problem() or "")
    with pytest.raises(RunDirError, match=r"restore run\.sqlite"):
        folder.check_database()
    with pytest.raises(sqlite3.DatabaseError):
        has_checkpoint(folder.db)
    folder.db.write_bytes(b"")  # an empty file reads as an empty database: no schema
    assert folder.database_problem() is None and not folder.has_schema() and not has_checkpoint(folder.db)


def test_the_lock_refuses_a_second_holder_and_names_the_first(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    with RunDir(run).lock():
        assert lock_holder(run) is not None
        with pytest.raises(RunDirError, match=rf"in use by process {lock_holder(run)}"):
            RunDir(run).lock().acquire()
    RunDir(run).lock().acquire().release()  # released


def test_checking_the_lock_changes_nothing_and_refuses_as_acquire_does(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    RunDir(run).lock().check()  # no run.lock yet: nothing holds it, nothing is created
    assert not (run / "run.lock").exists()
    (run / "run.lock").write_text("12345\n")  # a run that ended long ago
    RunDir(run).lock().check()
    assert (run / "run.lock").read_text() == "12345\n"  # the last holder's pid stays
    with RunDir(run).lock():
        with pytest.raises(RunDirError, match=rf"in use by process {os.getpid()}"):
            RunDir(run).lock().check()


def safetensors_file(path: Path, data: bytes) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [len(data) // 4], "data_offsets": [0, len(data)]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


def test_a_safetensors_file_cut_short_or_padded_is_found(tmp_path: Path) -> None:
    file = tmp_path / "a.safetensors"
    safetensors_file(file, b"\0" * 64)
    assert safetensors_problem(file) is None
    whole = file.read_bytes()
    file.write_bytes(whole[:-1])
    assert "half-written" in (safetensors_problem(file) or "")
    file.write_bytes(whole + b"\0")
    assert safetensors_problem(file) is not None
    file.write_bytes(whole[:20])
    assert safetensors_problem(file) is not None
    file.write_bytes(b"")
    assert "too short" in (safetensors_problem(file) or "")


def test_checking_a_damaged_wal_database_leaves_no_file_behind(tmp_path: Path) -> None:
    """Checked healthy, then with a page in the middle turned to garbage (the header still says
    WAL): the check names the damage, and both times the folder holds exactly the files it held
    before (SQLite's -wal/-shm included)."""
    run = a_run(tmp_path)
    with contextlib.closing(sqlite3.connect(run / "run.sqlite")) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.executemany("INSERT INTO notes VALUES (?)", [("x" * 500,)] * 200)
        conn.commit()
    before = sorted(p.name for p in run.iterdir())
    assert "run.sqlite-wal" not in before  # the last close folded the WAL back in
    assert RunDir(run).database_problem() is None
    assert sorted(p.name for p in run.iterdir()) == before  # a healthy one: no file created either
    with (run / "run.sqlite").open("r+b") as fh:
        fh.seek(4096 * 3)
        fh.write(b"\xff" * 4096)
    problem = RunDir(run).database_problem()
    assert problem is not None and "run.sqlite" in problem
    assert sorted(p.name for p in run.iterdir()) == before
