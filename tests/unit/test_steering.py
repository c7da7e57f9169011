"""Steering: the curriculum's side (retire now, pin, band, designer share, checkpoint round
trip) and the request side (checks that refuse and write nothing, the CLI's messages)."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.memory.records import EnvRecord
from spade_async.memory.steering import SteerError, describe, pinned_ids, queue_action
from spade_async.memory.store import Store
from tests.unit.test_curriculum import curriculum, design, live, play

# ------------------------------------------------------------------ the curriculum's side


def test_a_retired_design_is_scored_with_its_generation_over_the_steps_it_lived() -> None:
    cur = curriculum()
    kept, gone = design("Optimization", "kept"), design("Optimization", "gone")
    cur.live = [live(kept), live(gone)]
    play(cur, cur.live[0], 0, [1.0, 0.0, 1.0, 0.0], [1.0] * 4)
    play(cur, cur.live[1], 0, [1.0, 1.0, 1.0, 1.0], [1.0] * 4)
    reference = copy.deepcopy(cur)
    gone_env = cur.retire_now(cur.live[1].env_id)
    assert gone_env is not None and [e.env_id for e in cur.live] == [live(kept).env_id]
    assert cur.retire_now("no such env") is None
    play(cur, cur.live[0], 1, [1.0, 0.0, 1.0, 0.0])  # the generation goes on without it
    play(reference, reference.live[0], 1, [1.0, 0.0, 1.0, 0.0])
    play(reference, reference.live[1], 1, [0.0, 0.0, 0.0, 0.0])  # what it would have played
    retired, natural = cur.retire(), reference.retire()
    # Scored as a natural retirement would, but over step 0 only: its win rate is 1.0, not 0.5.
    assert sorted(s.env_id or "" for s in retired.scored) == sorted(s.env_id or "" for s in natural.scored)
    by_id = {s.env_id: s.candidate for s in retired.scored}
    assert by_id[gone_env.env_id].win_rate == 1.0
    assert {s.env_id: s.candidate for s in natural.scored}[gone_env.env_id].win_rate == 0.5
    assert len(retired.designer_samples) == 2 and cur.retired_early == [] and cur.live == []


def test_a_pinned_environment_is_carried_into_the_next_generation_without_its_design() -> None:
    cur = curriculum()
    a, b = design("Optimization", "a"), design("Optimization", "b")
    cur.live = [live(a), live(b)]
    play(cur, cur.live[0], 0, [1.0, 0.0])
    cur.pinned.add(cur.live[0].env_id)
    retired = cur.retire()
    assert len(retired.designer_samples) == 2  # its design is scored once, with its generation
    assert [e.env_id for e in cur.live] == [live(a).env_id] and cur.live[0].design is None
    assert cur.live[0].plain == {0: [1.0, 0.0]}  # its history goes on
    assert cur.retire().designer_samples == []  # never scored again


def test_an_all_hand_retired_generation_is_still_scored() -> None:
    cur = curriculum()
    cur.live = [live(design("Optimization", "only"))]
    play(cur, cur.live[0], 0, [1.0])
    cur.retire_now(cur.live[0].env_id)
    assert cur.live == [] and cur.has_generation() and cur.needs_regen(1)
    assert len(cur.retire().designer_samples) == 1


def test_band_and_share_survive_a_checkpoint_round_trip() -> None:
    cur = curriculum()
    cur.set_band(0.7, 0.9)  # above the old high: assigned high first, so low <= high throughout
    cur.set_band(0.1, 0.2)  # below the old low
    cur.design_share = 0.25
    cur.pinned.add("p")
    assert (cur.cfg.plateau_low, cur.cfg.plateau_high) == (0.1, 0.2) and cur.designs_wanted(4) == 1
    restored = curriculum()
    restored.load_state(copy.deepcopy(cur.state()))
    assert (restored.cfg.plateau_low, restored.cfg.plateau_high) == (0.1, 0.2)
    assert restored.design_share == 0.25 and restored.pinned == {"p"} and restored.band == (0.1, 0.2)
    old = cur.state()
    del old["steering"]  # a checkpoint written before steering existed
    fresh = curriculum()
    fresh.load_state(old)
    assert fresh.design_share == 1.0 and fresh.pinned == set() and fresh.band is None


# ------------------------------------------------------------------ the request side


@pytest.fixture
def run_db(tmp_path: Path) -> Path:
    db = tmp_path / "run" / "run.sqlite"

    async def make() -> None:
        async with await Store.open(db) as store:
            await store.start_run("t", '[selfplay]\nmode = "spade"\n[sandbox]\nmax_source_bytes = 100\n', None)
            await store.record_environment(
                EnvRecord(code="live one", domain="games", skill="x", origin="fresh", created_step=0, status="active")
            )
            await store.record_environment(
                EnvRecord(code="old one", domain="games", skill="x", origin="fresh", created_step=0, status="retired")
            )
            await store.record_environment(
                EnvRecord(
                    code="bad one",
                    domain="games",
                    skill="x",
                    origin="fresh",
                    created_step=0,
                    valid=False,
                    status="invalid",
                )
            )

    anyio.run(make)
    return db


def ids(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return {code: i for i, code in conn.execute("SELECT id, code FROM environments")}


def count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM steer_actions").fetchone()[0])


@pytest.mark.parametrize(
    ("kind", "args", "match"),
    [
        ("retire", {"env_id": "zz"}, "at least 4 hex"),
        ("retire", {"env_id": "0000000"}, "no environment with id"),
        ("band", {"low": 0.6, "high": 0.4}, "LOW <= HIGH"),
        ("band", {"low": -0.1, "high": 0.4}, "LOW <= HIGH"),
        ("band", {"low": float("nan"), "high": 0.4}, "LOW <= HIGH"),
        ("designer_share", {"share": 1.5}, r"fraction in \[0, 1\]"),
        ("inject", {"code": "", "name": "e.py"}, "non-empty"),
        ("inject", {"code": "x" * 101, "name": "e.py"}, "at most 100 bytes"),
        ("explode", {}, "unknown steering action"),
    ],
)
def test_invalid_requests_are_refused_and_write_nothing(
    run_db: Path, kind: str, args: dict[str, object], match: str
) -> None:
    with pytest.raises(SteerError, match=match):
        queue_action(run_db, kind, args, "test")
    assert count(run_db) == 0


def test_env_requests_check_the_environment_state(run_db: Path) -> None:
    env = ids(run_db)
    with pytest.raises(SteerError, match="never live"):
        queue_action(run_db, "retire", {"env_id": env["bad one"][:8]}, "test")
    with pytest.raises(SteerError, match="failed validation"):
        queue_action(run_db, "pin", {"env_id": env["bad one"][:8]}, "test")
    with pytest.raises(SteerError, match="is not pinned"):
        queue_action(run_db, "unpin", {"env_id": env["live one"][:8]}, "test")
    queued = queue_action(run_db, "pin", {"env_id": env["old one"][:6]}, "test")  # a retired valid one may come back
    assert queued.summary == f"pin {env['old one'][:12]}" and queued.run_status == "running"
    with sqlite3.connect(run_db) as conn:
        assert json.loads(conn.execute("SELECT args FROM steer_actions").fetchone()[0]) == {"env_id": env["old one"]}
        conn.execute("UPDATE steer_actions SET status = 'applied', step = 1")
        assert pinned_ids(conn) == {env["old one"]}
    with pytest.raises(SteerError, match="already pinned"):
        queue_action(run_db, "pin", {"env_id": env["old one"][:8]}, "test")


def test_a_database_without_steering_is_named(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    sqlite3.connect(db).close()
    with pytest.raises(SteerError, match="predates steering"):
        queue_action(db, "band", {"low": 0.1, "high": 0.2}, "test")
    with pytest.raises(SteerError, match="no run database"):
        queue_action(tmp_path / "none.sqlite", "band", {"low": 0.1, "high": 0.2}, "test")


def test_describe_names_what_is_asked() -> None:
    assert describe("retire", {"env_id": "a" * 64, "reason": "why"}) == f"retire {'a' * 12} (why)"
    assert (
        describe("inject", {"name": "e.py", "skill": "Optimization", "pin": True})
        == "inject e.py (skill Optimization, pinned)"
    )
    assert describe("band", {"low": 0.3, "high": 0.7}) == "target band 0.30-0.70"
    assert describe("designer_share", {"share": 0}) == "designer share 0.00"


def test_cli_queues_lists_and_refuses_with_one_line(run_db: Path, tmp_path: Path) -> None:
    run_dir = str(run_db.parent)
    runner = CliRunner()
    env = ids(run_db)
    ok = runner.invoke(cli, ["steer", run_dir, "retire", env["live one"][:8], "--reason", "exploited"])
    assert ok.exit_code == 0 and "queued #1: retire" in ok.output and "next step" in ok.output
    bad = runner.invoke(cli, ["steer", run_dir, "band", "0.9", "0.1"])
    assert bad.exit_code == 2 and "error: band 0.9-0.1" in bad.output and "Traceback" not in bad.output
    missing = runner.invoke(cli, ["steer", run_dir, "inject", str(tmp_path / "nope.py")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    (tmp_path / "e.py").write_text("class E: pass\n")
    injected = runner.invoke(
        cli, ["steer", run_dir, "inject", str(tmp_path / "e.py"), "--skill", "Optimization", "--pin"]
    )
    assert injected.exit_code == 0 and "inject e.py (skill Optimization, pinned)" in injected.output
    share = runner.invoke(cli, ["steer", run_dir, "designer-share", "0"])
    assert share.exit_code == 0
    listed = runner.invoke(cli, ["steer", run_dir, "list"])
    assert listed.exit_code == 0
    lines = listed.output.splitlines()
    assert len(lines) == 3 and "retire" in lines[0] and "(exploited)" in lines[0] and "[queued]" in lines[0]
    assert "designer share 0.00" in lines[2]
    nowhere = runner.invoke(cli, ["steer", str(tmp_path / "nothing"), "pin", "abcd"])
    assert nowhere.exit_code == 2 and "no run database" in nowhere.output


def test_an_environment_added_at_a_regenerating_step_joins_the_new_generation() -> None:
    from spade_async.selfplay.curriculum import LiveEnv

    cur = curriculum(regen_every=2)
    cur.live = [live(design("Optimization", "old"))]
    mid, at_regen = LiveEnv("mid", "c1", None, "x", "injected", 1), LiveEnv("regen", "c2", None, "x", "injected", 2)
    cur.join(mid, 1)  # mid-generation: live at once
    assert [e.env_id for e in cur.live][-1] == "mid" and cur.joining == []
    cur.join(at_regen, 2)  # step 2 regenerates: it waits for the new generation
    assert cur.joining == [at_regen]
    assert cur.retire_now("nothing") is None
    cur.retire()
    assert [e.env_id for e in cur.live] == ["regen"] and cur.joining == []  # not retired before it was played
