"""The report's chart settings, read back from the matplotlib figures: axis labels, fixed [0, 1]
ranges for returns and regret (as the TUI draws them), Vendi/n ticks, overlapping series kept
visible, live-only band shares, and the words shown where a chart does not apply."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from spade_async.report.build import build_report
from spade_async.report.data import RunData, read_run
from spade_async.report.markdown import summary
from spade_async.report.plots import draw
from spade_async.selfplay.design.status import DesignerTally
from tests.tui.fixture_db import build_fixture_db


def run_data(metrics: list[dict[str, float]], **kw: object) -> RunData:
    data = RunData(name="r", status="finished", **kw)  # type: ignore[arg-type]
    data.steps = list(range(1, len(metrics) + 1))
    data.metrics = [dict(m) for m in metrics]
    return data


@contextmanager
def figure(name: str, data: RunData) -> Iterator[Figure]:
    fig = draw(name, data)
    try:
        yield fig
    finally:
        plt.close(fig)


def texts(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.axes[0].texts)


def test_regret_axis_is_named_and_spans_zero_to_one_with_every_series_visible() -> None:
    # regret and the plain arm are both 0 at every step: the later one must not hide the first
    data = run_data(
        [{"regret_mean": 0.0, "hint_return_mean": 0.4 + 0.01 * i, "plain_return_mean": 0.0} for i in range(4)]
    )
    with figure("regret.png", data) as fig:
        ax = fig.axes[0]
        assert ax.get_ylabel() == "regret / mean return"
        lo, hi = ax.get_ylim()
        assert lo <= 0.0 and hi >= 1.0 and hi <= 1.05
        lines = ax.get_lines()
        assert len(lines) == 3
        marks = [(ln.get_marker(), ln.get_markersize(), ln.get_linestyle()) for ln in lines]
        assert len(set(marks)) == 3, marks
        regret, _hint, plain = lines
        assert regret.get_markersize() > plain.get_markersize()  # the dot drawn last sits inside the ring
        assert regret.get_markerfacecolor() == "none"


def test_return_chart_keeps_zero_to_one_when_the_data_sit_near_the_top() -> None:
    data = run_data([{"agent_return_mean": v} for v in (1.0, 0.9375, 1.0, 1.0)])  # one lost game in 16
    with figure("agent_return.png", data) as fig:
        lo, hi = fig.axes[0].get_ylim()
        assert lo <= 0.0 and 1.0 <= hi <= 1.05


def test_return_chart_widens_only_when_the_data_leave_zero_to_one() -> None:
    data = run_data([{"agent_return_mean": v} for v in (-0.5, 0.2)])
    with figure("agent_return.png", data) as fig:
        lo, hi = fig.axes[0].get_ylim()
        assert lo <= -0.5 and hi >= 1.0


def test_diversity_ticks_are_the_unit_scale_for_a_flat_line_near_one() -> None:
    data = run_data([{"env_diversity": v, "n_envs": 4.0} for v in (3.9, 4.0, 3.8, 4.0)])
    with figure("diversity.png", data) as fig:
        ticks = [round(t, 6) for t in fig.axes[0].get_yticks()]
        assert ticks == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_band_shares_are_of_live_environments_only() -> None:
    # 2 live environments, both too hard, and 2 designs rejected: 100% too hard, not 50%
    data = run_data([{"band_too_hard": 2.0, "band_in_band": 0.0, "band_too_easy": 0.0, "band_invalid": 2.0}] * 3)
    with figure("bands.png", data) as fig:
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["too hard", "in band", "too easy"]
        too_hard = ax.collections[0]
        top = max(v[1] for path in too_hard.get_paths() for v in path.vertices)
        assert math.isclose(top, 1.0)


def test_fixed_pool_run_says_regret_does_not_apply(tmp_path: Path) -> None:
    data = run_data([{"agent_return_mean": 0.2, "regret_mean": math.nan}] * 3, mode="fixed", hinted_plays=0)
    with figure("regret.png", data) as fig:
        assert "regret does not apply" in texts(fig)
        assert fig.axes[0].get_lines() == []
    md = summary(data, tmp_path)
    assert "Regret does not apply: a fixed-pool run has no designer" in md
    assert "Fixed-pool run" in md


def test_a_spade_run_without_hinted_plays_says_regret_was_not_measured() -> None:
    data = run_data([{"regret_mean": math.nan}] * 2, mode="spade", hinted_plays=0)
    with figure("regret.png", data) as fig:
        assert "selfplay.hinted_plays = 0" in texts(fig)


def test_summary_explains_a_designer_that_never_got_a_design_admitted(tmp_path: Path) -> None:
    tally = DesignerTally(6, 0, [("the code does not load", 4), ("reset(seed=0) failed", 2)])
    data = run_data([{"agent_return_mean": 0.1}], model="embedded:smollm2-135m-instruct", designer=tally)
    md = summary(data, tmp_path)
    assert "- designed: 6; admitted: 0 (0%)" in md
    assert "'the code does not load' x4, 'reset(seed=0) failed' x2" in md
    assert "A model this small (smollm2-135m-instruct)" in md and "docs/gpu.md" in md
    # a designer with admitted designs needs no excuse
    data.designer = DesignerTally(6, 2, [("the code does not load", 4)])
    assert "A model this small" not in summary(data, tmp_path)


def test_read_run_takes_mode_model_and_designer_tally_from_the_database(tmp_path: Path) -> None:
    db = build_fixture_db(tmp_path / "run.sqlite")
    data = read_run(db)
    assert data.designer.designed == 5 and data.designer.admitted == 4
    assert data.designer.reasons == [("SyntaxError", 1)]
    assert data.mode == "spade" and data.model is None


@pytest.mark.parametrize("mode", ["fixed", "spade"])
def test_report_files_are_written_for_either_mode(tmp_path: Path, mode: str) -> None:
    db = build_fixture_db(tmp_path / "run.sqlite")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET config_toml = ?", (f'[selfplay]\nmode = "{mode}"\nhinted_plays = 0\n',))
    conn.commit()
    conn.close()
    files = build_report(tmp_path, tmp_path / "out")
    md = files[0].read_text()
    assert ("Regret does not apply" in md) == (mode == "fixed")
    assert all(f.is_file() for f in files)
