"""A real run's lineage in `spade-async report` and `spade-async export lineage`: a run written by
the real pipeline (scripted designer that mutates every time, real sandbox and SQLite) has
mutation links; both outputs carry them, as the store recorded them."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import matplotlib.image
import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.export.lineage import LINEAGE_FORMAT, LINEAGE_VERSION
from spade_async.memory.lineage import ENDS
from spade_async.report.plots import PIXELS
from tests.integration.runs import pipeline_run, stored_links

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pipeline_run(tmp_path_factory.mktemp("lineage"), steps=4, mutation_fraction=1.0)


def test_export_lineage_writes_every_stored_link_as_versioned_json(run: Path, tmp_path: Path) -> None:
    links = stored_links(run)
    assert links, "every design of this run is a mutation: it must have links"
    out = tmp_path / "lineage.json"
    result = CliRunner().invoke(cli, ["export", "lineage", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"({len(links)} mutation links)" in result.output
    doc = json.loads(out.read_text())
    assert (doc["format"], doc["version"], doc["steps_counted_from"]) == (LINEAGE_FORMAT, LINEAGE_VERSION, 1)
    assert {(e["parent"], e["child"]) for e in doc["edges"]} == links
    nodes = {n["id"]: n for n in doc["nodes"]}
    with contextlib.closing(sqlite3.connect(run / "run.sqlite")) as conn:
        stored = {r[0]: r[1:] for r in conn.execute("SELECT id, created_step, win_rate, valid FROM environments")}
    assert set(nodes) == set(stored) and doc["summary"]["links"] == len(links)
    for parent, child in links:
        node = nodes[child]
        created, win, valid = stored[child]
        assert node["parent"] == parent and child in nodes[parent]["children"]
        assert node["generation"] == nodes[parent]["generation"] + 1
        assert (node["born_step"], node["win_rate"]) == (created + 1, win)  # steps as the console counts
        assert node["end"] in ENDS and (node["end"] == "rejected") == (not valid)
    again = CliRunner().invoke(cli, ["export", "lineage", str(run), "--out", str(out)])
    assert again.exit_code == 2 and "--force" in again.output  # never overwritten unasked
    stdout = CliRunner().invoke(cli, ["export", "lineage", str(run)])
    assert stdout.exit_code == 0 and json.loads(stdout.output) == doc


def test_report_has_the_lineage_table_and_figure(run: Path) -> None:
    links = stored_links(run)
    result = CliRunner().invoke(cli, ["report", str(run)])
    assert result.exit_code == 0, result.output
    md = (run / "report" / "report.md").read_text()
    section = md.split("## Lineage\n", 1)[1].split("\n## ", 1)[0]
    assert f"{len(links)} mutation link(s)" in section
    for parent, child in links:  # each child's row names its parent
        row = next(line for line in section.splitlines() if f"`{child[:8]}` |" in line)
        assert f"| `{parent[:8]}` |" in row, row
    png = run / "report" / "lineage.png"
    assert png.stat().st_size > 5_000
    height, width = matplotlib.image.imread(png).shape[:2]
    assert (width, height) == PIXELS
    assert "](lineage.png)" in md


def test_export_lineage_of_a_folder_without_a_run_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["export", "lineage", str(tmp_path)])
    assert result.exit_code == 2 and "not a spade-async run folder" in result.output
    assert "Traceback" not in result.output
