"""The run folder's one owner: its paths, whether a folder is a run, its database's health, its lock.

Why one place: the folder's file names were spelled in many modules, and the checks that
keep a run from being lost were nowhere. A damaged ``run.sqlite`` read as "no checkpoint yet"
made ``resume`` clear the run; an export whose output was the run folder deleted it; two
processes could train in one folder at once. Every command that writes into, or next to, a
run folder asks :class:`RunDir` first:

- :meth:`RunDir.database_problem`: the database opens and passes SQLite's ``quick_check``
  (a damaged or truncated file is an error naming the file, never a reason to start over);
- :func:`refuse_output`: an export's output is never the run folder, inside any run folder,
  a run's database, or a folder that holds the run;
- :meth:`RunDir.lock`: an OS-level lock (``flock`` on ``run.lock``, which holds the holder's
  PID) while a process trains in the folder; the kernel drops it when the process ends,
  ``kill -9`` included, so a crash never leaves a stale lock.

Here, in the memory layer, because the database check is SQL (all of it lives in
``spade_async.memory``); it imports no torch, so the CLI asks it before anything heavy loads.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from spade_async.memory.readonly import connect_readonly
from spade_async.util.errors import UserError
from spade_async.util.steps import DB_NAME, PREFIX

CONFIG_NAME = "config.toml"
CHECKPOINTS = "checkpoints"
ADAPTERS = "adapters"
LOCK_NAME = "run.lock"
"""The lock file: ``flock`` is held on it while a process trains in the folder; it holds that PID."""


class RunDirError(UserError):
    """A run folder that cannot be used as asked (damaged, in use, in the way): exit status 2."""

    exit_code = 2


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` holds a run: its database, or its config beside checkpoints or adapters."""
    if (path / DB_NAME).exists():
        return True
    return (path / CONFIG_NAME).is_file() and ((path / CHECKPOINTS).is_dir() or (path / ADAPTERS).is_dir())


@dataclass(frozen=True)
class RunDir:
    """One run folder and every path in it."""

    path: Path

    @property
    def db(self) -> Path:
        return self.path / DB_NAME

    @property
    def config(self) -> Path:
        return self.path / CONFIG_NAME

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS

    @property
    def adapters(self) -> Path:
        return self.path / ADAPTERS

    def holds_run(self) -> bool:
        return is_run_folder(self.path)

    def checkpoint_dirs(self) -> list[Path]:
        """The ``checkpoints/step_*`` folders on disk (committed or not)."""
        if not self.checkpoints.is_dir():
            return []
        return sorted(p for p in self.checkpoints.iterdir() if p.name.startswith(PREFIX) and p.is_dir())

    def database_problem(self) -> str | None:
        """Why the run's database cannot be read (None when it is readable, or absent)."""
        if not self.db.exists():
            return None
        if not self.db.is_file():
            return f"{self.db} is not a file"
        # Reading a WAL database makes SQLite create its -wal and -shm files, and "nothing was
        # changed" must hold for every file. Without a -wal file no connection has the database
        # open in WAL mode (the last one folds it back in and removes it), so the file is whole
        # and is read as it lies (immutable); a live run's database is read through its WAL.
        idle = not (self.path / f"{DB_NAME}-wal").exists()
        try:
            with contextlib.closing(connect_readonly(self.db, immutable=idle)) as conn:
                verdict = conn.execute("PRAGMA quick_check(1)").fetchone()
        except sqlite3.Error as exc:
            return f"{self.db} cannot be read ({exc})"
        if verdict is None or verdict[0] != "ok":
            what = " ".join(str(verdict[0]).split()) if verdict else "no answer from quick_check"
            return f"{self.db} is damaged ({what})"  # one line: SQLite's report has several
        return None

    def check_database(self) -> None:
        """Raise :class:`RunDirError` (naming the file and what to do) when the database is damaged."""
        problem = self.database_problem()
        if problem is not None:
            raise RunDirError(
                f"{problem}; nothing was changed: restore {DB_NAME} from a backup, or start the run "
                "again in a new folder (another run.run_dir)"
            )

    def check_writable(self, *inside: str | Path) -> None:
        """Raise :class:`RunDirError` when this process cannot write the folder or one of the
        paths ``inside`` it that exist (read-only media, ``chattr +i``, another user's run):
        for a command that writes there only after minutes of work, before that work."""
        for path in (self.path, *(self.path / p for p in inside)):
            if path.exists() and not os.access(path, os.W_OK):
                raise RunDirError(
                    f"cannot write in the run folder {self.path} ({path} is read-only); nothing was changed"
                )

    def has_schema(self) -> bool:
        """Whether the (readable) database has its tables: False for an empty or half-made one."""
        if not self.db.is_file():
            return False
        with contextlib.closing(connect_readonly(self.db)) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {"runs", "checkpoints"} <= names

    def lock(self) -> RunLock:
        return RunLock(self.path)


class RunLock:
    """``flock`` on ``run.lock`` in the run folder, for as long as a process trains in it.

    The file stays (removing it would race with a process opening it); what counts is the
    kernel's lock, which ends with the process however it ends. The descriptor is not inherited
    by programs the run starts (``O_CLOEXEC``)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.file = run_dir / LOCK_NAME
        self._fd: int | None = None

    def check(self) -> None:
        """Raise :class:`RunDirError` as :meth:`acquire` would (a folder this process cannot
        write, a run that holds it), changing nothing: the lock is taken and dropped at once and
        ``run.lock`` keeps its bytes. A folder without ``run.lock`` passes (no run holds it)."""
        if not self.file.exists():
            return
        self.acquire(record_pid=False).release()

    def acquire(self, *, record_pid: bool = True) -> RunLock:
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RunDirError(f"cannot write in the run folder {self.run_dir} ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunDirError(f"cannot lock the run folder {self.run_dir} ({exc.strerror or exc})") from None
            holder = lock_holder(self.run_dir)
            who = f"process {holder}" if holder is not None else "another process"
            raise RunDirError(
                f"{self.run_dir} is in use by {who} (a run or resume of it); wait for it to end or stop it"
                + (f" (kill {holder})" if holder is not None else "")
            ) from None
        if record_pid:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.release()


def lock_holder(run_dir: Path) -> int | None:
    """The PID written in ``run_dir``'s lock file (None when unreadable). Says who holds it only
    while the lock is held: the file outlives its process."""
    try:
        text = (run_dir / LOCK_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def refuse_output(out: Path, source: Path | None = None) -> None:
    """Raise :class:`RunDirError` when writing (or replacing) ``out`` could touch a run: ``out``
    is, or is inside, a run folder (``source`` or any other), is a run's database, or holds
    ``source``. Checked before anything is written, ``--force`` or not."""
    target = out.resolve()
    where = "" if target == out.absolute() else f" (= {target})"
    if source is not None:
        src = source.resolve()
        if target == src:
            raise RunDirError(f"{out}{where} is the run folder itself: write the export somewhere else")
        if src in target.parents:
            raise RunDirError(f"{out}{where} is inside the run folder {source}: write the export somewhere else")
        if target in src.parents:
            raise RunDirError(f"{out}{where} holds the run folder {source}: write the export somewhere else")
    if target.name == DB_NAME or target.name.startswith(f"{DB_NAME}-"):
        raise RunDirError(f"{out}{where} is a run's database: write the export somewhere else")
    for folder in (target, *target.parents):
        if is_run_folder(folder):
            raise RunDirError(f"{out}{where} is inside the run folder {folder}: write the export somewhere else")
