"""`export envs` on a run with nothing designed to export explains why (a fixed pool, a designer
whose designs all failed validation, or the filters) instead of failing bare."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from spade_async.cli.app import cli
from tests.tui.fixture_db import build_fixture_db

SMALL = '[model]\nname = "embedded:smollm2-135m-instruct"\n[selfplay]\nmode = "spade"\n'


def make_run(tmp_path: Path, config: str, *, all_invalid: bool, all_seeds: bool = False) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    build_fixture_db(run / "run.sqlite")
    (run / "config.toml").write_text(config)
    if all_invalid:
        conn = sqlite3.connect(run / "run.sqlite")
        conn.execute(
            "UPDATE environments SET valid = 0, status = 'invalid', reasons = ?",
            ('["reset(seed=0) failed: NameError: x"]',),
        )
        conn.commit()
        conn.close()
    if all_seeds:  # a fixed-pool run plays only seed environments
        conn = sqlite3.connect(run / "run.sqlite")
        conn.execute("UPDATE environments SET origin = 'seed'")
        conn.commit()
        conn.close()
    return run


def export(run: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["export", "envs", str(run), str(out), *args])
    return result.exit_code, " ".join(result.output.split())


def test_a_designer_with_no_admitted_design_is_explained(tmp_path: Path) -> None:
    run = make_run(tmp_path, SMALL, all_invalid=True)
    code, out = export(run, tmp_path / "envs_out")
    assert code == 2 and "Traceback" not in out
    assert "nothing to export from" in out and "none passed validation" in out
    assert "The designer wrote 5 environment(s)" in out and "'reset(seed=0) failed' x5" in out
    assert "A model this small (smollm2-135m-instruct)" in out and "docs/gpu.md" in out
    assert "--include-seeds exports the seed games" in out
    assert not (tmp_path / "envs_out").exists()


def test_a_fixed_pool_run_says_it_has_no_designer(tmp_path: Path) -> None:
    run = make_run(tmp_path, '[selfplay]\nmode = "fixed"\n', all_invalid=False, all_seeds=True)
    code, out = export(run, tmp_path / "envs_out")
    assert code == 2 and "fixed-pool run (no designer" in out and "--include-seeds" in out
    code, out = export(run, tmp_path / "envs_out", "--include-seeds")
    assert code == 0 and "wrote 4 environment(s)" in out


def test_filters_that_leave_nothing_say_how_many_designs_were_admitted(tmp_path: Path) -> None:
    run = make_run(tmp_path, SMALL, all_invalid=False)
    code, out = export(run, tmp_path / "envs_out", "--skill", "Nonexistent")
    assert code == 2 and "passes the filters (4 of 5 designs were admitted)" in out
    assert "A model this small" not in out
    ok, listing = export(run, tmp_path / "envs_ok")
    assert ok == 0 and "wrote 4 environment(s)" in listing
