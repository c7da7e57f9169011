"""The run database: migrations, content addressing, round trips, resume, WAL, crash safety."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from spade_async.memory.readonly import open_readonly
from spade_async.memory.records import EnvRecord, EpisodeRecord
from spade_async.memory.schema import MIGRATIONS
from spade_async.memory.store import Store, StoreError, env_id_for

pytestmark = pytest.mark.anyio


def env(code: str = "class Env: pass", **kw: object) -> EnvRecord:
    fields: dict[str, object] = dict(domain="games", skill="Optimization", origin="fresh", created_step=1)
    fields.update(kw)
    return EnvRecord(code=code, **fields)  # type: ignore[arg-type]


def episode(env_id: str, step: int, **kw: object) -> EpisodeRecord:
    fields: dict[str, object] = dict(adapter_version=step, hinted=False, outcome=1.0, turns=2)
    fields.update(kw)
    return EpisodeRecord(step=step, env_id=env_id, **fields)  # type: ignore[arg-type]


def tables(path: Path) -> set[str]:
    with closing(open_readonly(path)) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def applied(path: Path) -> list[str]:
    with closing(open_readonly(path)) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


@pytest.fixture
async def store(tmp_path: Path):
    s = await Store.open(tmp_path / "run.db")
    await s.start_run("test", "[run]\nseed = 0\n", {"level": "seccomp"})
    yield s
    await s.aclose()


# ------------------------------------------------------------------ migrations


async def test_open_creates_file_parents_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "run.db"
    async with await Store.open(path):
        pass
    assert path.is_file()
    assert {
        "runs",
        "environments",
        "episodes",
        "steps",
        "events",
        "checkpoints",
        "_migrations",
    } <= tables(path)
    assert applied(path) == [name for name, _ in MIGRATIONS]


async def test_reopen_is_idempotent_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    async with await Store.open(path) as s:
        await s.start_run("r", "x = 1", None)
    async with await Store.open(path) as s:
        assert await s.resume_run() == 1
    assert applied(path) == [name for name, _ in MIGRATIONS]


async def test_older_database_gets_only_new_migrations(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    async with await Store.open(path, migrations=MIGRATIONS[:1]):
        pass
    with closing(sqlite3.connect(path)) as conn, conn:  # a run written by the code of that time
        conn.execute("INSERT INTO runs (name, config_toml, config_hash, created_at) VALUES ('old', 'x = 1', '', 0)")
    newer = [
        *MIGRATIONS,
        ("9001_test_note", "ALTER TABLE runs ADD COLUMN note TEXT; CREATE TABLE extra (x);"),
    ]
    async with await Store.open(path, migrations=newer) as s:
        assert await s.resume_run() == 1  # the old row survived: 0001 was not re-run
    assert applied(path)[-1] == "9001_test_note"
    assert "extra" in tables(path)
    with closing(open_readonly(path)) as conn:
        assert "note" in [r[1] for r in conn.execute("PRAGMA table_info(runs)")]


async def test_failed_migration_rolls_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    bad = [
        *MIGRATIONS,
        ("9002_bad", "CREATE TABLE half (x); INSERT INTO no_such_table VALUES (1);"),
    ]
    with pytest.raises(StoreError, match="9002_bad"):
        await Store.open(path, migrations=bad)
    assert "half" not in tables(path)
    assert "9002_bad" not in applied(path)


async def test_database_from_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    async with await Store.open(path, migrations=[*MIGRATIONS, ("9003_future", "CREATE TABLE f (x);")]):
        pass
    with pytest.raises(StoreError, match="newer"):
        await Store.open(path)


# ------------------------------------------------------------------ environments


async def test_same_code_is_one_row(store: Store) -> None:
    first = await store.record_environment(env("A", hint="h1", created_step=1, doc_title="doc one"))
    again = await store.record_environment(
        env(
            "A",
            hint=None,
            created_step=5,
            status="retired",
            doc_title="doc two",
            win_rate=0.5,
            n_plays=3,
        )
    )
    assert first == again == env_id_for("A")
    got = await store.environment(first)
    assert got is not None
    assert (got.created_step, got.doc_title, got.hint) == (1, "doc one", "h1")  # first values kept
    assert (got.status, got.win_rate, got.n_plays) == ("retired", 0.5, 3)  # mutable fields updated
    assert len(await store.memory_candidates("games", 10)) == 1


async def test_environment_round_trip(store: Store) -> None:
    rec = env(
        "code = 1",
        skill="Logical Deduction",
        origin="mutation",
        created_step=7,
        hint="try x",
        doc_title="t",
        doc_text="body",
        valid=False,
        reasons=["no reset()", "timeout"],
        status="invalid",
        win_rate=0.25,
        hint_win_rate=0.75,
        regret=1.0,
        designer_reward=-0.5,
        n_plays=16,
        parent_id="p" * 64,
    )
    env_id = await store.record_environment(rec)
    got = await store.environment(env_id)
    assert got is not None and got.id == env_id
    rec.run_id, rec.updated_step = store.run_id, None
    assert got == rec
    assert await store.environment("0" * 64) is None


async def test_update_environment_stats(store: Store) -> None:
    env_id = await store.record_environment(env("B"))
    await store.update_environment_stats(
        env_id,
        step=4,
        win_rate=0.5,
        hint_win_rate=0.8,
        regret=1.0,
        designer_reward=0.3,
        n_plays=8,
        status="retired",
    )
    got = await store.environment(env_id)
    assert got is not None
    assert (got.win_rate, got.hint_win_rate, got.regret, got.designer_reward) == (
        0.5,
        0.8,
        1.0,
        0.3,
    )
    assert (got.n_plays, got.updated_step, got.status) == (8, 4, "retired")
    with pytest.raises(KeyError):
        await store.update_environment_stats(
            "f" * 64,
            step=1,
            win_rate=None,
            hint_win_rate=None,
            regret=None,
            designer_reward=None,
            n_plays=0,
        )


async def test_bad_origin_or_status_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="origin"):
        await store.record_environment(env(origin="mutate"))
    with pytest.raises(ValueError, match="status"):
        await store.record_environment(env(status="alive"))


async def test_memory_candidates_filter_and_order(store: Store) -> None:
    await store.record_environment(env("old", created_step=1, win_rate=0.5))
    await store.record_environment(env("new", created_step=9, win_rate=0.1))
    await store.record_environment(env("unplayed", created_step=10))  # no win rate yet
    await store.record_environment(env("broken", created_step=11, valid=False, status="invalid", win_rate=0.0))
    await store.record_environment(env("tool", created_step=12, domain="tool_use", win_rate=0.5))
    got = await store.memory_candidates("games", 10)
    assert [e.code for e in got] == ["new", "old"]
    assert [e.code for e in await store.memory_candidates("games", 1)] == ["new"]


# ------------------------------------------------------------------ runs, episodes, steps, events


async def test_run_round_trip_and_status(store: Store) -> None:
    run = await store.run()
    assert run is not None
    assert (run.name, run.config_toml, run.status, run.isolation) == (
        "test",
        "[run]\nseed = 0\n",
        "running",
        {"level": "seccomp"},
    )
    assert len(run.config_hash) == 64
    await store.set_run_status("interrupted")
    assert (await store.run()).status == "interrupted"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        await store.set_run_status("paused")
    assert await store.resume_run() == run.id
    assert (await store.run()).status == "running"  # type: ignore[union-attr]


async def test_resume_without_runs_is_none(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "run.db") as s:
        assert await s.resume_run() is None
        with pytest.raises(StoreError, match="start_run"):
            await s.record_step(1, 0, {}, 0.0)


async def test_episode_round_trip(store: Store) -> None:
    env_id = await store.record_environment(env())
    eps = [
        episode(
            env_id,
            3,
            hinted=True,
            outcome=-0.5,
            turns=4,
            truncated=True,
            transcript=[{"role": "agent", "text": "\\boxed{go}", "reward": 0.1}],
        ),
        episode(env_id, 3, outcome=0.0, transcript=[]),
    ]
    await store.record_episodes(eps)
    got = await store.episodes(env_id=env_id)
    assert [g.id for g in got] == [1, 2]
    for g in got:
        g.id = None
    assert got == eps
    assert await store.episodes(step=4) == []


async def test_episodes_are_one_transaction(store: Store) -> None:
    env_id = await store.record_environment(env())
    with pytest.raises(sqlite3.IntegrityError):  # the second one names an unknown env
        await store.record_episodes([episode(env_id, 1), episode("missing", 1)])
    assert await store.episodes() == []


async def test_step_round_trip_nan_is_null(store: Store) -> None:
    import numpy as np

    await store.record_step(1, 0, {"loss": float("nan"), "kl": np.float32(0.5), "n_envs": np.int64(3)}, 2.5)
    await store.record_step(1, 1, {"loss": 0.25}, 3.0)  # replaces
    await store.record_step(2, 1, {"grad_norm": math.inf}, 1.0)
    steps = await store.steps()
    assert [(s.step, s.adapter_version, s.metrics, s.wall_s) for s in steps] == [
        (1, 1, {"loss": 0.25}, 3.0),
        (2, 1, {"grad_norm": None}, 1.0),
    ]
    with closing(open_readonly(store.path)) as conn:  # plain JSON any reader can parse (no NaN token)
        for (text,) in conn.execute("SELECT metrics FROM steps"):
            json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


async def test_event_round_trip(store: Store) -> None:
    await store.record_event(None, "info", "started")
    await store.record_event(3, "rejected", "no reset()")
    got = await store.events()
    assert [(e.step, e.kind, e.message) for e in got] == [
        (None, "info", "started"),
        (3, "rejected", "no reset()"),
    ]
    assert [e.message for e in await store.events("rejected")] == ["no reset()"]


async def test_checkpoints(store: Store) -> None:
    assert await store.latest_checkpoint() is None
    await store.record_checkpoint(10, "/r/checkpoints/step_10")
    await store.record_checkpoint(20, "/r/checkpoints/step_20")
    assert await store.latest_checkpoint() == (20, "/r/checkpoints/step_20")
    assert await store.checkpoints() == [
        (20, "/r/checkpoints/step_20"),
        (10, "/r/checkpoints/step_10"),
    ]


async def test_truncate_after(store: Store) -> None:
    old = await store.record_environment(env("old", created_step=2))
    new = await store.record_environment(env("new", created_step=6))
    await store.record_episodes([episode(old, 3), episode(old, 6), episode(new, 7)])
    for step in (3, 5, 6, 7):
        await store.record_step(step, step, {"loss": 1.0}, 1.0)
        await store.record_event(step, "info", f"step {step}")
        await store.record_checkpoint(step, f"ck{step}")
    await store.record_event(None, "info", "no step")

    await store.truncate_after(5)

    assert [s.step for s in await store.steps()] == [3, 5]
    assert [e.step for e in await store.episodes()] == [3]
    assert [e.step for e in await store.events()] == [3, 5, None]
    assert await store.latest_checkpoint() == (5, "ck5")
    assert await store.environment(old) is not None
    assert await store.environment(new) is None


async def test_environment_stats_snapshot_restores(store: Store) -> None:
    env_id = await store.record_environment(env("A", created_step=1))
    await store.update_environment_stats(
        env_id, step=5, win_rate=0.5, hint_win_rate=0.6, regret=0.2, designer_reward=0.1, n_plays=4
    )
    snapshot = await store.environment_stats()
    await store.update_environment_stats(
        env_id,
        step=8,
        win_rate=0.9,
        hint_win_rate=0.9,
        regret=0.0,
        designer_reward=-1.0,
        n_plays=12,
        status="retired",
    )
    await store.truncate_after(5)
    await store.restore_environment_stats({**snapshot, "gone" * 16: snapshot[env_id]})
    got = await store.environment(env_id)
    assert got is not None
    assert (got.win_rate, got.n_plays, got.updated_step, got.status) == (0.5, 4, 5, "active")


# ------------------------------------------------------------------ WAL, readers, crash safety


async def test_wal_mode_and_synchronous_normal(store: Store) -> None:
    with closing(open_readonly(store.path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = await (await store._writer.execute("PRAGMA synchronous")).fetchone()
    assert row[0] == 1  # NORMAL


async def test_reader_reads_during_open_write_transaction(store: Store) -> None:
    await store.record_event(1, "info", "committed")
    with closing(open_readonly(store.path)) as ro:
        async with store._tx() as conn:
            await conn.execute(
                "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (?, 2, 'info', 'pending', 0)",
                (store.run_id,),
            )
            # Neither a separate process-style reader nor the store's own reader blocks or
            # sees the uncommitted row.
            assert [r[0] for r in ro.execute("SELECT message FROM events")] == ["committed"]
            assert [e.message for e in await store.events()] == ["committed"]
        assert [r[0] for r in ro.execute("SELECT message FROM events ORDER BY id")] == [
            "committed",
            "pending",
        ]


async def test_readonly_refuses_writes_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_readonly(tmp_path / "nothing.db")
    path = tmp_path / "run.db"
    async with await Store.open(path):
        pass
    with closing(open_readonly(path)) as conn:  # works after the writer closed (no -wal/-shm left)
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("INSERT INTO events (kind, message, created_at) VALUES ('x', 'y', 0)")


async def test_cancelled_write_is_rolled_back(store: Store) -> None:
    with anyio.move_on_after(0.05):
        async with store._tx() as conn:
            await conn.execute(
                "INSERT INTO events (run_id, kind, message, created_at) VALUES (?, 'info', 'lost', 0)",
                (store.run_id,),
            )
            await anyio.sleep(10)  # cancelled here, inside the transaction
    await store.record_event(2, "info", "after")  # would fail inside a dangling transaction
    assert [e.message for e in await store.events()] == ["after"]


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_kill_9_loses_only_uncommitted_work(tmp_path: Path, trial: int) -> None:
    path = tmp_path / "run.db"
    writer = Path(__file__).with_name("kill_writer.py")
    proc = subprocess.Popen(
        [sys.executable, str(writer), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert first.strip() == "1", proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(random.Random(trial).uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        # read() drains what readline() already buffered; communicate() would read the raw
        # pipe and lose those lines.
        out = proc.stdout.read()  # type: ignore[union-attr]
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    printed = [1] + [int(line) for line in out.split()]
    assert printed == list(range(1, len(printed) + 1))

    with closing(open_readonly(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        steps = {r[0]: json.loads(r[1]) for r in conn.execute("SELECT step, metrics FROM steps")}
        per_step = dict(conn.execute("SELECT step, COUNT(*) FROM episodes GROUP BY step").fetchall())
    assert set(printed) <= set(steps)  # every committed step is there
    assert max(steps) <= max(printed) + 1  # at most the one being committed at the kill
    for step, metrics in steps.items():  # and every row is whole
        assert metrics == {"check": 2 * step, "n": 5}
        assert per_step[step] == 5
    assert all(n == 5 for n in per_step.values())  # episode batches all-or-nothing

    async def resume() -> None:  # the crashed database opens, recovers and takes new writes
        async with await Store.open(path) as s:
            assert await s.resume_run() == 1
            await s.record_step(max(steps) + 1, 0, {"resumed": True}, 0.0)
            assert (await s.steps())[-1].metrics == {"resumed": True}

    anyio.run(resume)


def test_the_store_is_its_record_families_and_none_shadows_another() -> None:
    """``Store`` combines one class per record family (environments, episodes and steps, events
    and steering, checkpoints, evaluations) on one base: a method defined in two families would
    silently hide one of them, and a family left out of ``Store`` would lose its methods."""
    from spade_async.memory.store_base import StoreBase
    from spade_async.memory.store_checkpoints import CheckpointRecords
    from spade_async.memory.store_envs import EnvironmentRecords
    from spade_async.memory.store_episodes import EpisodeRecords
    from spade_async.memory.store_evals import EvalRecords
    from spade_async.memory.store_events import EventRecords

    families = [EnvironmentRecords, EpisodeRecords, EventRecords, CheckpointRecords, EvalRecords]
    assert set(StoreBase.__subclasses__()) == set(families)
    assert all(issubclass(Store, f) for f in families)
    owner: dict[str, str] = {}
    for cls in [StoreBase, *families, Store]:
        for name in vars(cls):
            if not name.startswith("__"):
                assert name not in owner, f"{cls.__name__}.{name} shadows {owner[name]}.{name}"
                owner[name] = cls.__name__
    for name in (
        "record_environment",
        "record_episodes",
        "record_event",
        "truncate_after",
        "record_evals",
        "start_run",
    ):
        assert hasattr(Store, name)
