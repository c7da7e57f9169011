"""Kill the vLLM engine's processes when the trainer dies, however it dies (kill -9 included).

Why: vLLM's EngineCore is a child process that does not watch its parent. A trainer killed
with SIGKILL leaves it running, holding its memory (on a GPU: the memory that the resumed
run's vLLM then fails its free-memory check on). ``PR_SET_PDEATHSIG`` cannot be used: it has
to be set inside the child (vLLM starts it, with spawn), and it fires when the *thread* that
started the child exits -- the engine is built in a worker thread that anyio retires.

How: after the engine is up, the trainer starts this small watcher (``python -m
spade_async.engine.reaper``) with the pids of the engine's processes and the read end of a
pipe whose write end only the trainer holds. When the trainer exits for any reason the
kernel closes that end; the watcher reads EOF, SIGKILLs the engine's processes and their
descendants that are still alive, and exits. A clean shutdown closes the engine first, so
the watcher then finds nothing to kill. The watcher ignores SIGINT (a terminal Ctrl-C is
the trainer's to handle) and runs no code of the engine's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from spade_async.hardware.gpu import sigint_shielded


def children_of(pid: int) -> set[int]:
    """Live direct children of ``pid`` (read from /proc; empty where /proc is missing)."""
    out: set[int] = set()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.add(int(entry.name))
    return out


def descendants(pids: Iterable[int]) -> set[int]:
    """``pids`` and every live process below them."""
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children_of(pid))
    return seen


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def kill_tree(pids: Iterable[int]) -> list[int]:
    """SIGKILL ``pids`` and their descendants; return the pids signalled."""
    victims = sorted(descendants(p for p in pids if is_alive(p)))
    killed = []
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


class Reaper:
    """The trainer's handle on a running watcher (see the module docstring)."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids = sorted(set(pids))
        read_end, self._write_end = os.pipe()  # both non-inheritable: no other child holds them
        try:
            with sigint_shielded():
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "spade_async.engine.reaper", str(read_end), *map(str, self.pids)],
                    pass_fds=(read_end,),
                    stdin=subprocess.DEVNULL,
                )
        finally:
            os.close(read_end)

    def close(self) -> None:
        """Stop watching (the engine is shut down): the watcher kills what is left and exits."""
        if self._write_end >= 0:
            os.close(self._write_end)
            self._write_end = -1
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)


def watch(read_fd: int, pids: list[int]) -> list[int]:
    """Block until the pipe's other end is closed, then kill ``pids``' trees."""
    while True:
        try:
            if not os.read(read_fd, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    return kill_tree(pids)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if len(argv) < 1:
        print("usage: python -m spade_async.engine.reaper READ_FD PID...", file=sys.stderr)
        return 2
    watch(int(argv[0]), [int(p) for p in argv[1:]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
