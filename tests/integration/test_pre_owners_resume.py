"""A run folder written before the run folder got its owners (``run/checkpointer.py``,
``memory/run_dir.py`` everywhere, ``Store`` split by record family) resumes through the real
CLI: the newest committed checkpoint is restored by the ``Checkpointer`` and the run finishes.

The fixture (tests/fixtures/pre_owners_run, see its README) was written at main a76d29e and
killed at ``checkpoint_commit:3``: steps 0-2 are in the database, checkpoints step_1 and step_2
are committed, step_3 is on disk uncommitted. Its config names absolute paths of the machine it
was written on; the copy here points them at this test's folder (so the config hash changes:
``--force``).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "pre_owners_run"
OLD_RUN_DIR = "/tmp/fx2/lottery"


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def _set(text: str, key: str, value: str) -> str:
    new, n = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', text, count=1, flags=re.M)
    assert n == 1, key
    return new


def test_a_run_from_before_the_owners_resumes_to_the_end(tmp_path: Path, tiny_model_dir: Path) -> None:
    run_dir = tmp_path / "lottery"
    shutil.copytree(FIXTURE, run_dir)
    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.copy(FIXTURE / "pool_lottery.py", pool / "lottery.py")
    config = run_dir / "config.toml"
    text = config.read_text()
    for key, value in (("name", str(tiny_model_dir)), ("run_dir", str(run_dir)), ("fixed_pool", str(pool))):
        text = _set(text, key, value)
    config.write_text(text)
    db = run_dir / "run.sqlite"
    with sqlite3.connect(db) as conn:  # the committed checkpoints' rows name the old folder
        conn.execute("UPDATE checkpoints SET path = replace(path, ?, ?)", (OLD_RUN_DIR, str(run_dir)))
    assert [s for (s,) in query(db, "SELECT step FROM checkpoints ORDER BY step")] == [0, 1]
    assert (run_dir / "checkpoints" / "step_2" / "state.json").is_file()

    cmd = [
        sys.executable,
        "-m",
        "spade_async.cli",
        "run",
        str(config),
        "--headless",
        "--sync",
        "--resume",
        "--force",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SPADE_ASYNC_KILL_AT", "SPADE_ASYNC_RAISE_AT")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "resuming at step 3" in done.stdout

    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert [s for (s,) in query(db, "SELECT step FROM steps ORDER BY step")] == [0, 1, 2, 3]
    assert {s for (s,) in query(db, "SELECT DISTINCT step FROM episodes")} == {0, 1, 2, 3}
    assert query(db, "SELECT status FROM runs") == [("finished",)]
    assert query(db, "SELECT count(*) FROM events WHERE kind = 'resume'") == [(1,)]
    assert [s for (s,) in query(db, "SELECT step FROM checkpoints ORDER BY step")] == [0, 1, 2, 3]
    for name in ("step_3", "step_4"):  # written after the resume
        folder = run_dir / "checkpoints" / name
        assert (folder / "state.json").is_file() and (folder / "tensors.safetensors").is_file()
        assert (folder / "adapter").is_dir() and (folder / "adapter_version").is_file()
        assert not (folder / "state.pt").exists()
    from spade_async.run.checkpoint import read_checkpoint

    state = read_checkpoint(run_dir / "checkpoints" / "step_4")
    assert state["step"] == 3 and state["learner"]["version"] >= 1
    assert read_checkpoint(run_dir / "checkpoints" / "step_2")["step"] == 1  # the old folder still loads
