"""The lineage screen (tui/lineage.py) on a run folder written by the real pipeline: a mutation
is shown under the environment it came from, with its win rate, regret and end, and
highlighting it shows its code and latest play in the browser's detail view."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from rich.syntax import Syntax
from textual.widgets import Static

from spade_async.memory.lineage import Lineage, read_lineage
from spade_async.memory.readonly import open_readonly
from spade_async.util.textsafe import terminal_safe
from tests.integration.runs import pipeline_run
from tests.tui.helpers import make_app, settle, text_of
from tui.lineage import LineageScreen, LineageTree
from tui.stats import fmt_num

pytestmark = pytest.mark.anyio


@pytest.fixture
def run_db(tmp_path: Path) -> Path:
    return pipeline_run(tmp_path, steps=4, mutation_fraction=1.0) / "run.sqlite"


def lineage_of(db: Path) -> Lineage:
    with contextlib.closing(open_readonly(db)) as conn:
        return read_lineage(conn)


async def test_the_lineage_screen_shows_a_real_runs_mutation_and_its_code(run_db: Path) -> None:
    lineage = lineage_of(run_db)
    edges = lineage.edges()
    assert edges, "the run must have admitted or rejected at least one mutation"
    parent_id, child_id = next((p, c) for p, c in edges if lineage.nodes[c].n_plays > 0)  # a played one
    child = lineage.nodes[child_id]
    with contextlib.closing(sqlite3.connect(run_db)) as conn:  # the link is the store's own
        assert conn.execute("SELECT parent_id FROM environments WHERE id = ?", (child_id,)).fetchone() == (parent_id,)
    app = make_app(run_db)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert "lineage" in text_of(app.screen.query_one("Footer"))  # the key is offered
        await pilot.press("l")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, LineageScreen)
        tree = screen.query_one(LineageTree)
        node = tree.node_for(child_id)
        assert node is not None and node.parent is not None and node.parent.data == parent_id
        label = str(node.label)
        assert child_id[:8] in label and f"gen {child.generation}" in label
        assert f"win {fmt_num(child.win_rate)}" in label and f"regret {fmt_num(child.regret)}" in label
        assert child.end in label
        caption = text_of(screen.query_one("#lineage-caption"))
        assert f"{len(edges)} mutation link(s)" in caption
        tree.move_cursor(node)
        await settle(app, pilot)
        code = screen.query_one("#env-code", Static).content
        assert isinstance(code, Syntax) and code.code == terminal_safe(
            app.reader.load_detail(child_id).code  # type: ignore[union-attr]
        )
        assert "Plain play" in text_of(screen.query_one("#env-plain")) and "outcome" in text_of(
            screen.query_one("#env-plain")
        )
        notes = list(app.notes)
        await pilot.press("e")  # acts on the browser's row, not this one: off here
        await settle(app, pilot)
        assert app.notes == notes
        await pilot.press("l")
        await settle(app, pilot)
        assert not isinstance(app.screen, LineageScreen)


@pytest.fixture
def unmutated_db(tmp_path: Path) -> Path:
    return pipeline_run(tmp_path, steps=2, mutation_fraction=0.0) / "run.sqlite"


async def test_a_run_without_mutations_says_so(unmutated_db: Path) -> None:
    db = unmutated_db
    app = make_app(db)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await pilot.press("l")
        await settle(app, pilot)
        assert "0 mutation link(s)" in text_of(app.screen.query_one("#lineage-caption"))
        tree = app.screen.query_one(LineageTree)
        assert [str(n.label) for n in tree.root.children][-1].endswith("no mutation came from")
