"""The lineage of a real `tiny` run: the console command `spade-async run configs/tiny.toml`
in a subprocess (real HF engine, real learner, real sandbox and SQLite; the tiny random model
in place of the embedded one, so it takes seconds; every design a mutation). Its mutation links
are the store's own, and the same links appear in the TUI's lineage screen (Pilot), in
`spade-async report` and in `spade-async export lineage`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from tests.integration.runs import stored_links
from tests.tui.helpers import make_app, settle
from tui.lineage import LineageScreen, LineageTree

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = {
    "run.max_steps": "2",
    "run.checkpoint_every": "2",
    "selfplay.mutation_fraction": "1.0",
    "selfplay.max_turns": "2",
    "selfplay.repair_turns": "0",
    "engine.designer.max_new_tokens": "64",
    "engine.hint.max_new_tokens": "8",
    "engine.agent.max_new_tokens": "4",
    "memory.embed_model": '"hashing"',
    "memory.design_pool": '"memory"',  # parents from the store (tiny's library files are not rows)
    "warmstart.enabled": "false",  # the shipped warm start is the embedded model's, not the tiny model's
}


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    run = tmp_path_factory.mktemp("lineage-real") / "tiny"
    sets = {**OVERRIDES, "model.name": f'"{tiny_model_dir}"', "run.run_dir": f'"{run}"'}
    args = [sys.executable, "-m", "spade_async.cli", "run", str(ROOT / "configs" / "tiny.toml"), "--headless"]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    proc = subprocess.run(
        args, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return run


def test_a_real_runs_mutation_links_are_in_the_export_and_the_report(real_run: Path, tmp_path: Path) -> None:
    links = stored_links(real_run)
    assert links, "every design of this run is a mutation of a memory environment"
    out = CliRunner().invoke(cli, ["export", "lineage", str(real_run)])
    assert out.exit_code == 0, out.output
    assert {(e["parent"], e["child"]) for e in json.loads(out.output)["edges"]} == links
    report = CliRunner().invoke(cli, ["report", str(real_run), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "report.md").read_text()
    lineage = text[text.index("## Lineage") :]
    for parent, child in links:
        assert child[:8] in lineage and parent[:8] in lineage
    assert (tmp_path / "report" / "lineage.png").is_file()


async def test_a_real_runs_mutation_sits_under_its_parent_in_the_tui(real_run: Path) -> None:
    links = stored_links(real_run)
    assert links
    app = make_app(real_run / "run.sqlite")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await pilot.press("l")
        await settle(app, pilot)
        assert isinstance(app.screen, LineageScreen)
        tree = app.screen.query_one(LineageTree)
        for parent, child in links:
            node = tree.node_for(child)
            assert node is not None and node.parent is not None and node.parent.data == parent
            assert child[:8] in str(node.label)
