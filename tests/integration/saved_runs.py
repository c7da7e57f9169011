"""Resuming a run folder saved by older code (tests/fixtures/*_run): copy it, point its config
and its committed checkpoint rows at this test's folders, resume it through the real CLI to the
end. Shared by the resume tests of each saved format."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def _set(text: str, key: str, value: str) -> str:
    new, n = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', text, count=1, flags=re.M)
    assert n == 1, key
    return new


def copy_saved_run(fixture: Path, old_run_dir: str, tmp_path: Path, tiny_model_dir: Path) -> Path:
    """The fixture copied to ``tmp_path/lottery``, its config naming this machine's tiny model,
    the copy and its pool, its checkpoint rows the copy's folders; returns the copy."""
    run_dir = tmp_path / "lottery"
    shutil.copytree(fixture, run_dir)
    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.copy(fixture / "pool_lottery.py", pool / "lottery.py")
    config = run_dir / "config.toml"
    text = config.read_text()
    for key, value in (("name", str(tiny_model_dir)), ("run_dir", str(run_dir)), ("fixed_pool", str(pool))):
        text = _set(text, key, value)
    config.write_text(text)
    with sqlite3.connect(run_dir / "run.sqlite") as conn:  # the committed checkpoints' rows name the old folder
        conn.execute("UPDATE checkpoints SET path = replace(path, ?, ?)", (old_run_dir, str(run_dir)))
    return run_dir


def resume_to_the_end(run_dir: Path) -> subprocess.CompletedProcess[str]:
    """``spade-async run CONFIG --headless --sync --resume --force`` on the copy (the config hash
    changed with its paths); asserts it exits 0."""
    cmd = [sys.executable, "-m", "spade_async.cli", "run", str(run_dir / "config.toml")]
    cmd += ["--headless", "--sync", "--resume", "--force"]
    env = {k: v for k, v in os.environ.items() if k not in ("SPADE_ASYNC_KILL_AT", "SPADE_ASYNC_RAISE_AT")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def assert_finished_from_step_3(run_dir: Path, done: subprocess.CompletedProcess[str]) -> None:
    """A fixture killed at ``checkpoint_commit:3`` resumed at step 3 and finished its 4 steps; the
    checkpoints written after the resume are in the data format (no pickle)."""
    from spade_async.run.checkpoint import read_checkpoint

    db = run_dir / "run.sqlite"
    assert "resuming at step 3" in done.stdout
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert [s for (s,) in query(db, "SELECT step FROM steps ORDER BY step")] == [0, 1, 2, 3]
    assert {s for (s,) in query(db, "SELECT DISTINCT step FROM episodes")} == {0, 1, 2, 3}
    assert query(db, "SELECT status FROM runs") == [("finished",)]
    assert query(db, "SELECT count(*) FROM events WHERE kind = 'resume'") == [(1,)]
    assert [s for (s,) in query(db, "SELECT step FROM checkpoints ORDER BY step")] == [0, 1, 2, 3]
    for name in ("step_3", "step_4"):
        folder = run_dir / "checkpoints" / name
        assert (folder / "state.json").is_file() and (folder / "tensors.safetensors").is_file()
        assert (folder / "adapter").is_dir() and (folder / "adapter_version").is_file()
        assert not (folder / "state.pt").exists()
    state = read_checkpoint(run_dir / "checkpoints" / "step_4")
    assert state["step"] == 3 and state["learner"]["version"] >= 1
    assert read_checkpoint(run_dir / "checkpoints" / "step_2")["step"] == 1  # the saved folder still loads
