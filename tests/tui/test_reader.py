"""RunReader: first poll reads everything, later polls only what is new or changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from spade_async.memory.schema import MIGRATIONS
from tests.tui.fixture_db import (
    COUNTER,
    ENVS,
    EVENTS,
    LAST_STEP,
    N_STEPS,
    RUN_NAME,
    T0,
    insert_event,
    insert_step,
    open_writer,
    step_metrics,
)
from tui.reader import RunReader


def test_first_poll_reads_the_whole_run(db_path: Path) -> None:
    result = RunReader(db_path).poll()
    assert result.waiting is None
    assert result.run is not None
    assert (result.run.name, result.run.status, result.run.created_at) == (RUN_NAME, "running", T0)
    assert [s.step for s in result.steps] == list(range(N_STEPS))
    assert result.steps[-1].metrics["regret_mean"] == step_metrics(LAST_STEP)["regret_mean"]
    assert [e.kind for e in result.events] == [kind for _, kind, _ in EVENTS]
    assert {e.id for e in result.envs} == {e.id for e in ENVS}


def test_later_polls_return_only_new_rows(db_path: Path) -> None:
    reader = RunReader(db_path)
    reader.poll()
    again = reader.poll()
    assert again.steps == [] and again.events == []
    assert {e.created_step for e in again.envs} <= {LAST_STEP}  # only the newest step's rows

    conn = open_writer(db_path)
    insert_step(conn, N_STEPS, step_metrics(LAST_STEP))
    insert_event(conn, N_STEPS, "checkpoint", "saved", created_at=T0 + 999)
    conn.execute(
        "UPDATE environments SET win_rate = 0.25, updated_step = ? WHERE id = ?",
        (N_STEPS, COUNTER.id),
    )
    conn.commit()
    conn.close()

    new = reader.poll()
    assert [s.step for s in new.steps] == [N_STEPS]
    assert [e.message for e in new.events] == ["saved"]
    changed = {e.id: e.win_rate for e in new.envs}
    assert changed[COUNTER.id] == 0.25
    # Old, untouched environments are not read again.
    assert all(max(e.created_step, e.updated_step or 0) >= LAST_STEP for e in new.envs)


def test_missing_database_is_a_wait_not_an_error(tmp_path: Path) -> None:
    reader = RunReader(tmp_path / "run.sqlite")
    result = reader.poll()
    assert result.run is None and result.waiting and "waiting" in result.waiting
    assert not (tmp_path / "run.sqlite").exists()  # reading never creates the file


def test_database_without_schema_or_run_waits(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    sqlite3.connect(path).close()  # empty file: no tables yet
    assert RunReader(path).poll().waiting is not None
    conn = sqlite3.connect(path)
    for _name, sql in MIGRATIONS:
        conn.executescript(sql)
    conn.close()
    result = RunReader(path).poll()
    assert result.run is None and result.waiting == "waiting for the run to start"


def test_load_detail_reads_code_hint_document_and_both_plays(db_path: Path) -> None:
    detail = RunReader(db_path).load_detail(COUNTER.id)
    assert detail is not None
    assert detail.code == COUNTER.code
    assert detail.hint == COUNTER.hint
    assert detail.doc_title == COUNTER.doc_title
    assert detail.plain is not None and not detail.plain.hinted
    assert detail.hinted is not None and detail.hinted.hinted
    assert detail.hinted.outcome == 1.0
    assert detail.hinted.transcript[0].role == "hint"
    assert detail.hinted.transcript[-1].reward == 1.0
    assert RunReader(db_path).load_detail("no-such-id") is None


def test_malformed_json_is_tolerated(db_path: Path) -> None:
    conn = open_writer(db_path)
    conn.execute("UPDATE steps SET metrics = 'not json' WHERE step = 0")
    conn.execute(
        "UPDATE episodes SET transcript = ? WHERE hinted = 0",
        (json.dumps([{"role": "agent", "text": "x", "reward": "high"}, 3]),),
    )
    conn.execute("UPDATE environments SET reasons = 'oops' WHERE id = ?", (COUNTER.id,))
    conn.commit()
    conn.close()
    reader = RunReader(db_path)
    assert reader.poll().steps[0].metrics == {}
    detail = reader.load_detail(COUNTER.id)
    assert detail is not None and detail.plain is not None
    assert [(t.role, t.reward) for t in detail.plain.transcript] == [("agent", None)]
    assert detail.reasons == ["oops"]


def _rewind_to(db_path: Path, step: int) -> None:
    """What a resume does: drop everything after the checkpoint, then log a 'resume' event."""
    conn = open_writer(db_path)
    for table in ("episodes", "steps", "events"):
        conn.execute(f"DELETE FROM {table} WHERE step > ?", (step,))
    conn.execute("DELETE FROM environments WHERE created_step > ?", (step,))
    conn.commit()
    conn.close()


def test_a_resume_rewind_makes_the_next_poll_a_full_reset(db_path: Path) -> None:
    reader = RunReader(db_path)
    reader.poll()
    _rewind_to(db_path, 5)
    conn = open_writer(db_path)
    insert_event(conn, 5, "resume", "resumed from checkpoint at step 6", created_at=T0 + 900)
    insert_step(conn, 6, {**step_metrics(6), "regret_mean": 0.99})
    conn.commit()
    conn.close()
    result = reader.poll()
    assert result.reset
    assert [s.step for s in result.steps] == list(range(7))
    assert result.steps[-1].metrics["regret_mean"] == 0.99
    assert {e.created_step for e in result.envs} == {0, 4}
    assert [e.kind for e in result.events] == ["checkpoint", "resume"]
    assert not reader.poll().reset


def test_a_truncation_seen_before_the_resume_event_also_resets(db_path: Path) -> None:
    reader = RunReader(db_path)
    reader.poll()
    _rewind_to(db_path, 5)
    result = reader.poll()
    assert result.reset and [s.step for s in result.steps] == list(range(6))


def test_poll_reads_max_steps_and_new_eval_rows_once(tmp_path: Path) -> None:
    from tests.tui.fixture_db import EVALS, build_fixture_db

    reader = RunReader(build_fixture_db(tmp_path / "run.sqlite"))
    try:
        first = reader.poll()
        assert first.run is not None and first.run.max_steps == 24
        assert [(r["model"], r["metric"], r["delta"]) for r in first.evals] == [
            (m, metric, d) for _, m, _, metric, _, _, _, d, _, _ in EVALS
        ]
        assert reader.poll().evals == []
    finally:
        reader.close()
