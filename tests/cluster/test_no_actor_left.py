"""Ctrl-C or kill -9 of a trainer that started its own local Ray cluster leaves no Ray
process, pool actor or env child behind. Ctrl-C: the pool closes and Ray is shut down.
kill -9: Ray's processes share the fate of the process that started them, and the pool's
fork-server and children die with the actor."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

TRAINER = textwrap.dedent("""
    import anyio, time
    from spade_async.cluster.pool import RemoteSandboxPool
    from spade_async.config import ClusterConfig, SandboxConfig
    from spade_async.testing import COIN_ENV

    async def main():
        async with await RemoteSandboxPool.start(
            SandboxConfig(warm_children=0, max_children=2),
            ClusterConfig(enabled=True, address="local", local_cpus=1, sandbox_pools=1, pool_cpus=1.0,
                          object_store_mib=100)) as pool:
            env = await pool.open(COIN_ENV)
            await env.reset(0)
            print("actor", pool.members[0].pid, flush=True)
            await anyio.sleep(3600)

    anyio.run(main)
""")


def descendants(pid: int) -> set[int]:
    """Every live process whose parent chain reaches ``pid``."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    live = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            live.add(pid)
    return live


def stop_and_check_gone(trainer: subprocess.Popen[str], sig: signal.Signals, tree: set[int]) -> None:
    """Send ``sig`` to the trainer (Ctrl-C: it closes its actors and stops Ray by itself) and
    assert that every process of ``tree`` ends within 90 s."""
    trainer.send_signal(sig)
    trainer.wait(timeout=120)
    deadline = time.monotonic() + 90
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(tree), [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in alive(tree)]


def end_what_is_left(trainer: subprocess.Popen[str], tree: set[int]) -> None:
    """Only what this test started, should an assertion have failed."""
    if trainer.poll() is None:
        trainer.kill()
    for pid in alive(tree):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_stopping_the_trainer_leaves_no_ray_process_or_env_child(sig: signal.Signals) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    tree: set[int] = set()
    try:
        assert trainer.stdout is not None
        line = trainer.stdout.readline()
        assert line.startswith("actor "), line
        actor = int(line.split()[1])
        tree = descendants(trainer.pid) | descendants(actor) | {actor}
        assert actor in tree and len(tree) >= 4  # gcs, raylet, the actor, its fork-server and env child
        stop_and_check_gone(trainer, sig, tree)
    finally:
        end_what_is_left(trainer, tree)


TRAINER_WITH_ENGINE = textwrap.dedent("""
    import anyio, sys
    from spade_async.cluster.engine import RemoteEngine
    from spade_async.cluster.pool import RemoteSandboxPool
    from spade_async.config import Config
    from spade_async.engine.base import GenerationRequest, Sampling
    from spade_async.testing import COIN_ENV

    MODEL = sys.argv[1]

    async def main():
        cfg = Config.model_validate({
            "run": {"device": "cpu"}, "model": {"name": MODEL},
            "sandbox": {"warm_children": 0, "max_children": 2},
            "cluster": {"enabled": True, "address": "local", "local_cpus": 2, "sandbox_pools": 1, "pool_cpus": 1.0,
                        "engine_replicas": 1, "engine_cpus": 1.0, "object_store_mib": 100}})
        async with await RemoteSandboxPool.start(cfg.sandbox, cfg.cluster) as pool:
            async with await RemoteEngine.start(cfg, MODEL) as engine:
                env = await pool.open(COIN_ENV)
                await env.reset(0)
                await engine.generate([GenerationRequest([1, 2, 3], Sampling(max_new_tokens=2), affinity="e")])
                print("actors", pool.members[0].pid, engine.members[0].pid, flush=True)
                await anyio.sleep(3600)

    anyio.run(main)
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_stopping_a_trainer_with_engine_replicas_leaves_no_ray_process(
    sig: signal.Signals, tiny_model_dir: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER_WITH_ENGINE, str(tiny_model_dir)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    tree: set[int] = set()
    try:
        assert trainer.stdout is not None
        line = trainer.stdout.readline()
        assert line.startswith("actors "), line
        actors = {int(pid) for pid in line.split()[1:]}
        tree = descendants(trainer.pid) | actors | {p for a in actors for p in descendants(a)}
        assert actors <= tree and len(tree) >= 5  # gcs, raylet, the replica, the pool, its fork-server and env child
        stop_and_check_gone(trainer, sig, tree)
    finally:
        end_what_is_left(trainer, tree)
