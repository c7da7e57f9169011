"""Bad inputs never cost a run: each command, given a damaged file or a mistaken path, refuses
with one line and exit status 2, and the run folder is left exactly as it was.

All cases run the real CLI in a subprocess on copies of one real tiny run (the tiny random
model, HF engine, real trainer, sandbox and SQLite; 2 steps, a checkpoint after each), made
once for the module. "Exactly as it was" is :func:`snapshot`: the sha256 of every file and
the row count of every table (SQLite's own side files, ``-wal``/``-shm``, and the lock file,
which a reader or a refused command may create, are left out; their content is in the rows).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from spade_async.memory.run_dir import LOCK_NAME, RunDir, RunDirError
from spade_async.testing import LOTTERY_ENV

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SIDE_FILES = ("run.sqlite-wal", "run.sqlite-shm", LOCK_NAME)


def cli(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_ASYNC_")}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-m", "spade_async.cli", *map(str, args)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def refused(done: subprocess.CompletedProcess[str], *names: str) -> str:
    """The one error line of a refused command (exit 2, no traceback); it names every ``names``."""
    everything = done.stdout + done.stderr
    assert done.returncode == 2, everything[-3000:]
    assert "Traceback" not in everything, everything[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    for name in names:
        assert name in errors[0], (name, errors[0])
    return errors[0]


def row_counts(db: Path) -> dict[str, int] | str:
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?immutable=1", uri=True)) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"


def snapshot(run: Path) -> dict[str, Any]:
    """Every file of ``run`` by its sha256, and every table's row count."""
    files = {
        str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name not in SIDE_FILES
    }
    return {"files": files, "rows": row_counts(run / "run.sqlite")}


MINI_RUN = """
[run]
name = "bad-inputs"
run_dir = "{run}"
max_steps = 2
device = "cpu"
checkpoint_every = 1
keep_checkpoints = 10

[model]
name = "{model}"
dtype = "float32"
lora_rank = 4
lora_alpha = 8

[engine]
backend = "hf"
max_model_len = 1024

[engine.agent]
max_new_tokens = 4
stop = ["}}"]

[selfplay]
mode = "fixed"
fixed_pool = "{pool}"
envs_per_step = 1
plays = 2
hinted_plays = 0
max_turns = 1
repair_turns = 0
action_prefill = true

[memory]
embed_model = "hashing"

[log]
backends = ["console"]
"""
"""A 2-step fixed-pool run on the tiny model, a checkpoint after each step (~20 s on 2 cores)."""


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("bad_inputs")
    pool = root / "pool"
    pool.mkdir()
    (pool / "lottery.py").write_text(LOTTERY_ENV)
    run = root / "run"
    config = root / "mini.toml"  # its own config: a preset may change (a warm start, more steps)
    config.write_text(MINI_RUN.format(run=run, model=tiny_model_dir, pool=pool))
    done = cli("run", config, "--headless", "--sync", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run / "checkpoints" / "step_2" / "adapter" / "adapter_model.safetensors").is_file()
    return run


@pytest.fixture
def run(real_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the real run for one test."""
    copy = tmp_path / "run"
    shutil.copytree(real_run, copy)
    return copy


def cut_short(file: Path, by: int = 100) -> None:
    with file.open("r+b") as fh:
        fh.truncate(file.stat().st_size - by)


# --- 1a. a damaged database is an error, never a reason to start over ------------------------


@pytest.mark.parametrize("damage", ["truncated", "not-a-database", "emptied"])
def test_resume_of_a_damaged_database_refuses_and_clears_nothing(run: Path, damage: str) -> None:
    db = run / "run.sqlite"
    if damage == "truncated":
        cut_short(db, db.stat().st_size // 2)
    elif damage == "not-a-database":
        db.write_text("these are my notes, not a database\n" * 200)
    else:
        db.write_bytes(b"")
    before = snapshot(run)
    line = refused(cli("resume", run, "--headless"), str(db))
    assert "restore" in line and "new folder" in line
    assert snapshot(run) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{run}"],
        ["steer", "{run}", "list"],
        ["steer", "{run}", "band", "0.2", "0.8"],
        ["export", "lineage", "{run}"],
        ["export", "envs", "{run}", "{tmp}/out", "--include-seeds"],
    ],
    ids=["report", "steer-list", "steer-band", "export-lineage", "export-envs"],
)
def test_reading_commands_on_a_damaged_database_are_one_line(run: Path, tmp_path: Path, argv: list[str]) -> None:
    db = run / "run.sqlite"
    db.write_text("not a database\n" * 300)
    before = snapshot(run)
    refused(cli(*(a.format(run=run, tmp=tmp_path) for a in argv)), "run.sqlite")
    assert snapshot(run) == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["resume", "{run}", "--headless"],
        ["report", "{run}"],
        ["steer", "{run}", "list"],
        ["export", "lineage", "{run}"],
        ["export", "envs", "{run}", "{tmp}/out", "--include-seeds"],
        ["eval", "{run}", "--suite", "games:easy", "--episodes", "1"],
        ["eval", "{run}", "--suite", "games:easy", "--episodes", "1", "--no-save"],
    ],
    ids=["resume", "report", "steer-list", "export-lineage", "export-envs", "eval", "eval-no-save"],
)
def test_a_damaged_page_is_refused_in_one_line_and_leaves_no_file(run: Path, tmp_path: Path, argv: list[str]) -> None:
    """The header still says WAL and one page in the middle is garbage (a disk error, a bad copy):
    SQLite would create run.sqlite-wal and -shm on reading it; every command refuses in one line
    before that, and the folder lists exactly the files it listed (sidecars included)."""
    db = run / "run.sqlite"
    with db.open("r+b") as fh:
        fh.seek(4096 * 5)
        fh.write(b"\xff" * 8192)
    listing = sorted(str(p.relative_to(run)) for p in run.rglob("*"))
    done = cli(*(a.format(run=run, tmp=tmp_path) for a in argv))
    line = refused(done, "run.sqlite")
    assert "damaged" in line and done.stderr.strip() == line
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*")) == listing
    assert not (tmp_path / "out").exists()


# --- 1b. an export never writes into (or over) a run -------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["envs", "{run}", "{run}", "--force", "--include-seeds"],
        ["envs", "{run}", "{run}/checkpoints", "--force", "--include-seeds"],
        ["adapter", "{run}", "{run}", "--force"],
        ["adapter", "{run}", "{run}/checkpoints/step_1", "--force"],
        ["adapter", "{run}", "{tmp}", "--force"],  # the folder that holds the run
        ["lineage", "{run}", "--out", "{run}/run.sqlite", "--force"],
        ["lineage", "{run}", "--out", "{run}/lineage.json"],
        ["envs", "{run}", "{other}/checkpoints", "--force", "--include-seeds"],  # another run
    ],
    ids=[
        "envs-into-run",
        "envs-into-checkpoints",
        "adapter-onto-run",
        "adapter-into-checkpoint",
        "adapter-onto-parent",
        "lineage-onto-database",
        "lineage-into-run",
        "envs-into-other-run",
    ],
)
def test_an_export_into_a_run_is_refused_force_or_not(run: Path, tmp_path: Path, argv: list[str]) -> None:
    other = tmp_path / "other"
    shutil.copytree(run, other)
    before, before_other = snapshot(run), snapshot(other)
    refused(cli("export", *(a.format(run=run, tmp=tmp_path, other=other) for a in argv)), "run folder")
    assert snapshot(run) == before and snapshot(other) == before_other


@pytest.mark.parametrize("inside", ["", "checkpoints", "adapters", "plots"])
def test_a_report_into_the_run_folder_is_refused(run: Path, inside: str) -> None:
    """Only the report's own folder (RUN_DIR/report, its default) may be inside the run."""
    before = snapshot(run)
    refused(cli("report", run, "--out", run / inside), "run folder")
    assert snapshot(run) == before


def test_force_replaces_only_an_earlier_export(run: Path, tmp_path: Path) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    refused(cli("export", "adapter", run, mine, "--force"), str(mine), "not an earlier export")
    assert (mine / "thesis.tex").read_text() == "years of work"
    out = tmp_path / "adapter_out"
    assert cli("export", "adapter", run, out).returncode == 0
    again = cli("export", "adapter", run, out, "--force", "--step", "1")
    assert again.returncode == 0, again.stderr
    assert '"step": 1' in (out / "spade_export.json").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".adapter_out.")]  # no temp left


def test_an_export_onto_a_link_or_a_file_is_refused(run: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    link = tmp_path / "link_envs"
    link.symlink_to(elsewhere)
    refused(cli("export", "envs", run, link, "--force", "--include-seeds"), str(link), "symbolic link")
    assert link.is_symlink() and (elsewhere / "keep.txt").read_text() == "mine"
    file = tmp_path / "lineage_dir"
    file.mkdir()
    refused(cli("export", "lineage", run, "--out", file, "--force"), str(file), "is a directory")  # click says so
    envs_file = tmp_path / "envs_file"
    envs_file.write_text("mine")
    refused(cli("export", "envs", run, envs_file, "--force", "--include-seeds"), str(envs_file), "is a file")
    assert envs_file.read_text() == "mine"


def test_export_of_a_half_written_adapter_is_refused(run: Path, tmp_path: Path) -> None:
    weights = run / "checkpoints" / "step_2" / "adapter" / "adapter_model.safetensors"
    cut_short(weights)
    out = tmp_path / "adapter_out"
    refused(cli("export", "adapter", run, out), str(weights), "half-written")
    assert not out.exists()
    assert cli("export", "adapter", run, out, "--step", "1").returncode == 0  # the whole one still exports


# --- 1c. one process trains in a run folder at a time -----------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from spade_async.memory.run_dir import RunDir
lock = RunDir(Path(sys.argv[1])).lock().acquire()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_second_resume_names_the_holder_and_kill_9_frees_the_lock(run: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = snapshot(run)
        done = cli("resume", run, "--headless", "--max-steps", "3")
        line = refused(done, str(run), f"process {holder.pid}")
        assert "in use" in line
        # A moved copy (its config names another run_dir): the note is for a run that starts,
        # so a refused resume says one line only.
        assert done.stderr.strip().splitlines() == [line], done.stderr
        with pytest.raises(RunDirError, match=f"process {holder.pid}"):
            RunDir(run).lock().acquire()
        assert snapshot(run) == before
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    with RunDir(run).lock():  # the kernel dropped the dead holder's lock
        assert (run / LOCK_NAME).read_text().strip() == str(os.getpid())


# --- 1d + 2. a moved copy resumes itself, past a half-written newest checkpoint -----------------


def test_a_moved_copy_resumes_itself_from_its_newest_whole_checkpoint(real_run: Path, run: Path) -> None:
    """And while it trains, the resumed run holds the folder's lock under its own PID."""
    original = snapshot(real_run)
    adapter = run / "checkpoints" / "step_2" / "adapter" / "adapter_model.safetensors"
    cut_short(adapter)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_ASYNC_")}
    env |= {"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "spade_async.cli", "resume", str(run), "--headless"]  # no --force: same config
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        out = ""
        for line in proc.stdout:
            out += line
            if line.startswith("resuming at step"):
                with pytest.raises(RunDirError, match=f"in use by process {proc.pid}"):
                    RunDir(run).lock().acquire()
                break
        rest, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    out += rest
    assert proc.returncode == 0, out[-2000:] + err[-3000:]
    assert f"note: resuming the run in {run}" in err and str(real_run) in err
    assert "skipping a damaged checkpoint: checkpoints/step_2" in out
    assert "resuming at step 2 from the checkpoint after step 1" in out
    assert snapshot(real_run) == original  # the run the config names was not touched
    from spade_async.util.safetensors_check import safetensors_problem

    assert safetensors_problem(adapter) is None  # step 2 trained and checkpointed again, whole
    assert row_counts(run / "run.sqlite")["checkpoints"] == 2  # type: ignore[index]
    RunDir(run).lock().acquire().release()  # free once the run has ended


# --- 3. more of the one error path -------------------------------------------------------------


def test_steer_on_a_finished_run_and_an_unparsable_inject_are_refused(run: Path, tmp_path: Path) -> None:
    before = snapshot(run)
    refused(cli("steer", run, "band", "0.2", "0.8"), "finished")
    with contextlib.closing(sqlite3.connect(run / "run.sqlite")) as conn:
        with conn:
            conn.execute("UPDATE runs SET status = 'interrupted'")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the file: the snapshot compares its bytes
    before = snapshot(run)
    broken = tmp_path / "broken.py"
    broken.write_text("class Game:\n    def reset(self:\n")
    refused(cli("steer", run, "inject", broken), "broken.py", "not valid Python")
    assert snapshot(run) == before


def test_deeply_nested_config_and_override_are_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    refused(cli("config", "show", deep), str(deep), "nests too deeply")
    refused(cli("config", "show", "tiny", "--set", "run.name=" + "[" * 3000 + "]" * 3000), "nests too deeply")


def test_run_dir_naming_a_file_and_doc_into_a_missing_folder_are_one_line(run: Path, tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    refused(cli("run", run / "config.toml", "--headless", "--set", f'run.run_dir="{file}"'), str(file))
    assert file.read_text() == "mine"
    missing = tmp_path / "no" / "such" / "config.md"
    done = cli("config", "doc", "--write", missing)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and str(missing.parent) in done.stderr


def test_a_step_that_is_not_a_number_is_named_as_such(run: Path, tmp_path: Path) -> None:
    refused(cli("eval", run, "--step", "abc"), "--step abc: not a step number", "available: 1, 2")
    refused(cli("export", "adapter", run, tmp_path / "out", "--step", "two"), "--step two: not a step number")
    refused(cli("eval", run, "--step", "7"), "no checkpoint after step 7", "available: 1, 2")
    assert not (tmp_path / "out").exists()


def test_a_model_not_on_this_machine_is_one_line_before_the_run_folder_exists(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_ASYNC_")}
    env.update(PYTHONPATH=str(ROOT), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")  # an empty cache
    done = subprocess.run(
        [sys.executable, "-m", "spade_async.cli", "run", "tiny", "--headless", "--set", 'model.name="nobody/no-such-model"',
         "--set", f'run.run_dir="{run_dir}"'],
        env=env, capture_output=True, text=True, timeout=180, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "nobody/no-such-model" in errors[0] and "Hugging Face cache" in errors[0], done.stderr
    assert not run_dir.exists()  # refused before anything was written


def test_ctrl_c_in_env_play_exits_at_once() -> None:
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: the real CLI on a terminal
        # as an interactive shell starts a foreground job: Ctrl-C not ignored, not blocked. A test
        # run started in the background of a script (`cmd &`) inherits SIGINT ignored, and exec
        # keeps that, so without this the CLI never sees the Ctrl-C typed below.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.chdir(ROOT)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "spade_async.cli", "env", "play", "mastermind", "--seed", "1"])
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"action" not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 1)[0]:
                seen += os.read(fd, 4096)
        assert b"action" in seen, seen[-2000:]
        os.write(fd, b"\x03")  # Ctrl-C, typed
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 130
                return
            with contextlib.suppress(OSError):
                if select.select([fd], [], [], 0.2)[0]:
                    seen += os.read(fd, 4096)
        pytest.fail(f"env play still running 10 s after Ctrl-C: {seen[-500:]!r}")
    finally:
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


@pytest.mark.parametrize("no_save", [False, True], ids=["save", "no-save"])
def test_eval_of_a_run_folder_it_cannot_write_is_one_line_before_scoring(run: Path, no_save: bool) -> None:
    """eval writes eval/ (and, saving, the results rows) only after scoring; a folder it cannot
    write is refused first. Root ignores permission bits, so the folder is made immutable."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(run)], capture_output=True).returncode == 0
        undo = ["chattr", "-i", str(run)]
    else:
        run.chmod(0o555)
        made, undo = True, ["chmod", "755", str(run)]
    if not made:
        pytest.skip("this file system cannot make a folder read-only for root (chattr +i)")
    try:
        before = snapshot(run)
        done = cli("eval", run, "--suite", "games:easy", "--episodes", "1", *(["--no-save"] if no_save else []))
        line = refused(done, "cannot write in the run folder")
        assert done.stderr.strip() == line and not done.stdout.strip()
        assert snapshot(run) == before
    finally:
        subprocess.run(undo, check=True)
