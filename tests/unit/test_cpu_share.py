"""The CPU share: stages running together split the cores, a stage alone takes them all, and
a stage hands its OpenMP team back when it ends (in a fresh interpreter, since a team is
process state)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest
import torch

from spade_async.hardware.cpu_share import CpuShare, available_cores, threads_for


def test_threads_for_splits_the_cores_and_never_gives_zero() -> None:
    assert threads_for(8, 1) == 8
    assert threads_for(8, 2) == 4
    assert threads_for(2, 2) == 1
    assert threads_for(2, 3) == 1
    assert threads_for(2, 0) == 2
    assert available_cores() >= 1


def _in_thread(fn):  # a worker thread: torch's thread count is per calling thread
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_stage_alone_takes_every_core_and_two_stages_take_half_each() -> None:
    share = CpuShare(cores=4)
    other_in, other_out = threading.Event(), threading.Event()

    def other_stage() -> None:
        with share.stage():
            other_in.set()
            other_out.wait(10)

    def measure() -> tuple[int, int, int]:
        before = torch.get_num_threads()
        try:
            with share.stage():
                alone = torch.get_num_threads()
                holder = threading.Thread(target=other_stage)
                holder.start()
                other_in.wait(10)
                share.fit_threads()  # the boundary where a running stage re-reads its share
                together = torch.get_num_threads()
                other_out.set()
                holder.join()
                share.fit_threads()
                return alone, together, torch.get_num_threads()
        finally:
            torch.set_num_threads(before)

    assert _in_thread(measure) == (4, 2, 4)
    assert share.running == 0


def test_an_unconfigured_share_leaves_thread_counts_alone() -> None:
    share = CpuShare()

    def measure() -> tuple[int, int | None]:
        before = torch.get_num_threads()
        torch.set_num_threads(3)
        try:
            with share.stage():
                share.fit_threads()
                return torch.get_num_threads(), share.threads()
        finally:
            torch.set_num_threads(before)

    assert _in_thread(measure) == (3, None)


def test_a_stage_counts_until_it_raises() -> None:
    share = CpuShare(cores=2)
    with pytest.raises(RuntimeError), share.stage():
        assert share.running == 1
        raise RuntimeError("boom")
    assert share.running == 0


TEAM_SCRIPT = textwrap.dedent(
    """
    import os, threading, time, torch
    from spade_async.hardware.openmp import release_openmp_team
    torch.set_num_threads(2)

    def live_threads():
        return len(os.listdir("/proc/self/task"))

    base = live_threads()
    a = torch.randn(512, 512)
    (a @ a).sum()  # a parallel op: this thread now keeps an OpenMP team (one more thread)
    with_team = live_threads()
    released = release_openmp_team()
    deadline = time.monotonic() + 10  # a freed worker exits on its own schedule: wait for it, not forever
    while live_threads() > base and time.monotonic() < deadline:
        time.sleep(0.01)
    print(base, with_team, live_threads(), released)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_releasing_a_team_ends_its_worker_threads() -> None:
    out = subprocess.run([sys.executable, "-c", TEAM_SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    base, with_team, after, released = out.stdout.split()
    assert released == "True"
    assert int(with_team) > int(base)  # the team's worker exists while the thread keeps it
    assert int(after) == int(base)  # and is gone once released


def test_a_cpu_run_shares_its_cores_while_it_runs_and_not_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_pipeline` turns the share on for a CPU run (every core this process may use) for
    as long as the run is driven, and off again afterwards."""
    import anyio

    from spade_async.config import Config
    from spade_async.hardware.cpu_share import CPU_SHARE
    from spade_async.run import assemble

    during: list[int | None] = []

    async def drive(cfg: Config, **_: object) -> int:
        during.append(CPU_SHARE.cores)
        return 0

    monkeypatch.setattr(assemble, "_drive", drive)
    cfg = Config.model_validate({"run": {"device": "cpu"}})
    code = anyio.run(lambda: assemble.run_pipeline(cfg, sync=False, resume=False, force=False, report=print))
    assert code == 0
    assert during == [available_cores()]
    assert CPU_SHARE.cores is None
