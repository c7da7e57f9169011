"""The archive panel: hidden until the run has archive rounds, then one line per round with
its 'still solved' count; the reader brings each archive row once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.tui.fixture_db import T0, open_writer
from tests.tui.helpers import make_app, settle, text_of
from tui.reader import RunReader

pytestmark = pytest.mark.anyio
SIZE = (120, 48)


def insert_round(db: Path, step: int, adapter: str, results: list[tuple[str, float, float | None]]) -> None:
    """(env id, return at retirement, return now) per archived environment; solved at 0.5."""
    conn = open_writer(db)
    conn.executemany(
        "INSERT INTO archive_evals (run_id, created_at, step, env_id, skill, adapter, retired_step, return_then, "
        "return_now, n, n_errors, solved_then, solved_now, seconds) VALUES (1, ?, ?, ?, 'Logic', ?, 2, ?, ?, 2, 0, ?, ?, 1.0)",
        [
            (T0 + step, step, env, adapter, then, now, int(then >= 0.5), int(now is not None and now >= 0.5))
            for env, then, now in results
        ],
    )
    conn.commit()
    conn.close()


async def test_archive_panel_appears_with_the_run_first_round_and_shows_each_round(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not app.query_one("#archive").display and not app.query_one("#archive-caption").display
        insert_round(db_path, 9, "v4", [("a", 1.0, 1.0), ("b", 0.75, 0.5), ("c", 0.0, 1.0)])
        insert_round(db_path, 11, "v5", [("a", 1.0, 0.0), ("b", 0.75, 0.5), ("c", 0.0, None)])
        await app.poll_now()
        await pilot.pause()
        assert app.query_one("#archive").display and app.query_one("#archive-caption").display
        lines = text_of(app.query_one("#archive")).splitlines()
        assert "still solved" in lines[0]
        first = next(line for line in lines if line.split()[:2] == ["10", "v4"])
        last = next(line for line in lines if line.split()[:2] == ["12", "v5"])
        assert "2/2 (100%)" in first and "0.83" in first  # return now over a, b, c: (1 + 0.5 + 1) / 3
        assert "1/2 (50%)" in last and "0.25" in last  # c had no return this round: left out


def test_reader_brings_archive_rows_once_and_none_from_an_older_database(db_path: Path) -> None:
    reader = RunReader(db_path)
    try:
        assert reader.poll().archive == []
        insert_round(db_path, 3, "v2", [("a", 1.0, 0.0)])
        found = reader.poll().archive
        assert [(r["step"], r["env_id"], r["return_then"], r["return_now"], r["solved_now"]) for r in found] == [
            (3, "a", 1.0, 0.0, 0)
        ]
        assert reader.poll().archive == []
    finally:
        reader.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("DROP TABLE archive_evals")
    reader = RunReader(db_path)
    try:
        assert reader.poll().archive == []
    finally:
        reader.close()
