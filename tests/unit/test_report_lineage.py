"""The report's lineage figure and table on a hand-made lineage: one segment per mutation link,
dots coloured by how each environment ended, unplayed ones on their own row, and words
instead of an empty chart or table when nothing was mutated."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.collections import PathCollection

from spade_async.export.lineage import lineage_data
from spade_async.memory.lineage import build_lineage
from spade_async.memory.records import LineageRow
from spade_async.report.data import RunData
from spade_async.report.markdown import summary
from spade_async.report.plots import END_COLOURS, NOT_PLAYED_Y, draw


def row(env_id: str, parent: str | None, step: int, **kw: object) -> LineageRow:
    fields: dict[str, object] = {
        "origin": "mutation" if parent else "seed",
        "skill": "logic|games",
        "updated_step": step + 1,
        "valid": True,
        "status": "retired",
        "win_rate": 0.5,
        "regret": 0.25,
        "n_plays": 8,
    }
    fields.update(kw)
    return LineageRow(id=env_id * 8, parent_id=None if parent is None else parent * 8, created_step=step, **fields)  # type: ignore[arg-type]


ROWS = [
    row("a", None, 0),
    row("b", "a", 0, win_rate=0.75, status="active"),
    row("c", "b", 2, win_rate=None, valid=False, status="invalid", reasons=("reset() failed",)),
    row("d", None, 1),  # never mutated: not in the table
]


def data_with(rows: list[LineageRow]) -> RunData:
    data = RunData(name="r", status="finished")
    data.lineage = build_lineage(rows)
    return data


def test_the_figure_draws_each_link_and_each_end() -> None:
    fig = draw("lineage.png", data_with(ROWS))
    try:
        ax = fig.axes[0]
        segments = [tuple(map(tuple, line.get_xydata())) for line in ax.get_lines() if len(line.get_xdata()) == 2]
        assert ((1.0, 0.5), (1.0, 0.75)) in segments and ((1.0, 0.75), (3.0, NOT_PLAYED_Y)) in segments
        dots = {c.get_label(): c.get_offsets().tolist() for c in ax.collections if isinstance(c, PathCollection)}
        assert dots == {"retired": [[1.0, 0.5]], "live": [[1.0, 0.75]], "rejected": [[3.0, NOT_PLAYED_Y]]}
        assert set(dots) <= set(END_COLOURS)
    finally:
        plt.close(fig)


def test_a_run_without_mutations_says_so_in_the_figure_and_the_table(tmp_path: Path) -> None:
    data = data_with([row("a", None, 0), row("d", None, 1)])
    fig = draw("lineage.png", data)
    try:
        assert "no mutations" in " ".join(t.get_text() for t in fig.axes[0].texts)
    finally:
        plt.close(fig)
    md = summary(data, tmp_path)
    section = md.split("## Lineage\n", 1)[1].split("\n## ", 1)[0]
    assert "0 mutation link(s)" in section and "no environment was designed as a mutation" in section
    assert "| environment |" not in section


def test_the_table_lists_lines_parents_first_with_the_win_rate_move(tmp_path: Path) -> None:
    md = summary(data_with(ROWS), tmp_path)
    section = md.split("## Lineage\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert [r.split("`")[1] for r in rows] == ["aaaaaaaa", "bbbbbbbb", "cccccccc"]  # d: never mutated
    assert "logic\\|games" in rows[0]  # a cell cannot break the table
    assert "| +0.250 |" in rows[1] and "live" in rows[1]
    assert "rejected at step 3: reset() failed" in rows[2]
    assert "how they stand: live 1, retired 2, rejected 1" in section


def test_the_export_document_counts_steps_from_one_and_keeps_cut_links() -> None:
    doc = lineage_data(build_lineage([row("a", "z", 0), row("b", "a", 4)]), "r")
    a, b = doc["nodes"]
    assert (a["parent"], a["recorded_parent"], a["cut"]) == (None, "z" * 8, "missing")
    assert (b["born_step"], b["ended_step"], b["generation"]) == (5, 6, 1)
    assert doc["edges"] == [{"parent": "a" * 8, "child": "b" * 8}] and doc["roots"] == ["a" * 8]
