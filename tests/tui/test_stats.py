"""Pure aggregations and renderers: the numbers the panels show."""

from __future__ import annotations

import math
from pathlib import Path

from tests.tui.fixture_db import COUNTER, ENVS, T0
from tui.export import export_env
from tui.reader import RunInfo, RunReader, StepRow
from tui.stats import (
    band_counts,
    elapsed_s,
    fmt_duration,
    latest,
    matches,
    points,
    recent_envs,
    skill_stats,
)
from tui.widgets.bands import render_bands
from tui.widgets.plots import Series, downsample, nice_ticks, tick_labels, y_range


def _step(step: int, **metrics: float) -> StepRow:
    return StepRow(step, 0, 1.0, T0 + step, dict(metrics))


def test_series_and_latest_skip_unmeasured_values() -> None:
    steps = [_step(0, loss=1.0), _step(1, loss=math.nan), _step(2), _step(3, loss=0.5)]
    assert points(steps, "loss") == ((1, 4), (1.0, 0.5))  # steps counted from 1, like the header
    assert latest(steps, "loss") == 0.5
    assert latest(steps[:3], "loss") == 1.0
    assert latest(steps, "kl") is None


def test_band_counts_come_from_the_newest_step_that_has_them() -> None:
    steps = [_step(0, band_too_easy=3, band_in_band=1), _step(1, loss=0.1)]
    assert band_counts(steps) == [("too easy", 3), ("in band", 1), ("too hard", 0), ("rejected", 0)]
    assert band_counts([]) == [("too easy", 0), ("in band", 0), ("too hard", 0), ("rejected", 0)]


def test_skill_stats_aggregate_the_fixture(db_path: Path) -> None:
    rows = {r.skill: r for r in skill_stats(RunReader(db_path).poll().envs)}
    assert set(rows) == {"Mathematical Reasoning", "Logical Deduction", "Spatial Reasoning"}
    logic = rows["Logical Deduction"]
    assert (logic.count, logic.valid_pct) == (2, 50.0)
    assert logic.mean_win_rate == 0.3  # the invalid one has no win rate and is not averaged
    assert logic.mean_regret == 0.8
    maths = rows["Mathematical Reasoning"]
    assert maths.mean_win_rate is not None and math.isclose(maths.mean_win_rate, 0.7)
    assert maths.mean_regret is not None and math.isclose(maths.mean_regret, 0.4)


def test_filter_and_order_of_recent_envs(db_path: Path) -> None:
    envs = RunReader(db_path).poll().envs
    ordered = recent_envs(envs)
    assert [e.created_step for e in ordered] == sorted((e.created_step for e in ENVS), reverse=True)
    assert [e.skill for e in recent_envs(envs, "spatial")] == ["Spatial Reasoning"]
    assert {e.status for e in recent_envs(envs, "INVALID")} == {"invalid"}
    assert [e.id for e in recent_envs(envs, COUNTER.id[:10])] == [COUNTER.id]
    assert matches(ordered[0], "   ")
    assert len(recent_envs(envs, limit=2)) == 2


def test_elapsed_runs_to_now_or_to_the_last_step() -> None:
    steps = [_step(0), _step(9)]
    running = RunInfo(1, "r", "running", T0)
    finished = RunInfo(1, "r", "finished", T0)
    assert elapsed_s(running, steps, T0 + 100) == 100
    assert elapsed_s(finished, steps, T0 + 100) == 9
    assert fmt_duration(3723) == "1:02:03"


def test_chart_scale_is_zero_to_one_widened_to_the_data() -> None:
    assert y_range([]) == (0.0, 1.0)
    assert y_range([Series("a", "red", (1, 2), (0.2, 0.3))]) == (0.0, 1.0)  # 0.2 stays small
    assert y_range([Series("a", "red", (1,), (-0.5,)), Series("b", "blue", (1,), (1.5,))]) == (-0.5, 1.5)


def test_chart_ticks_are_round_numbers_and_whole_steps() -> None:
    assert nice_ticks(0.0, 1.0, 5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert tick_labels([0.0, 0.25, 0.5]) == ["0.00", "0.25", "0.50"]
    assert nice_ticks(0.0, 1.0, 3) == [0.0, 0.5, 1.0]
    assert nice_ticks(-0.5, 1.0, 4) == [-0.5, 0.0, 0.5, 1.0]
    assert nice_ticks(1, 12, 7, whole=True) == [2, 4, 6, 8, 10, 12]
    assert nice_ticks(0, 2, 10, whole=True) == [0, 1, 2]  # never a fractional step
    assert tick_labels([0.0, 5.0, 10.0]) == ["0", "5", "10"]
    assert nice_ticks(1, 500, 7, whole=True) == [100, 200, 300, 400, 500]
    assert nice_ticks(1, 12, 2, whole=True) == [1, 12]  # a narrow chart still names both ends


def test_downsample_keeps_short_series_and_averages_long_ones() -> None:
    assert downsample([1, 2, 3], [0.1, 0.2, 0.3], 4) == ([1, 2, 3], [0.1, 0.2, 0.3])
    assert downsample([1, 2, 3, 4], [1.0, 3.0, 5.0, 7.0], 2) == ([1.5, 3.5], [2.0, 6.0])
    xs, ys = downsample(list(range(1000)), [1.0] * 1000, 112)
    assert len(xs) == len(ys) == 112 and ys == [1.0] * 112 and xs[0] < xs[-1]


def test_band_histogram_shows_counts_and_shares() -> None:
    text = render_bands([("too easy", 1), ("in band", 3), ("too hard", 0), ("rejected", 0)]).plain
    assert "in band" in text and " 3   75%" in text and "  0    0%" in text


def test_band_shares_leave_rejected_designs_out_of_the_live_environments() -> None:
    # issue 26: 2 live environments, both too hard, and 2 rejected designs read "50% too hard"
    lines = render_bands([("too easy", 0), ("in band", 0), ("too hard", 2), ("rejected", 2)]).plain.splitlines()
    assert lines[2].startswith(" too hard") and lines[2].endswith("  2  100%")
    assert lines[3].startswith(" rejected") and lines[3].endswith("  2  designs, not live")


def test_export_writes_a_runnable_file(db_path: Path, tmp_path: Path) -> None:
    detail = RunReader(db_path).load_detail(COUNTER.id)
    assert detail is not None
    path = export_env(detail, tmp_path / "out")
    assert path.name == f"mathematical_reasoning_{COUNTER.id[:12]}.py"
    source = path.read_text()
    assert f"# hint: {COUNTER.hint}" in source and COUNTER.code in source
    namespace: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), namespace)
    game = namespace["CounterGame"]()  # type: ignore[operator]
    assert game.reset()[0].startswith("Total 0")


def test_eta_from_recent_step_times() -> None:
    from tui.stats import eta_s

    steps = [StepRow(i, i, 10.0, T0 + 10 * i, {}) for i in range(4)]
    assert eta_s(RunInfo(1, "r", "running", T0, max_steps=10), steps) == 60.0  # 6 steps left x 10 s
    assert eta_s(RunInfo(1, "r", "finished", T0, max_steps=10), steps) is None
    assert eta_s(RunInfo(1, "r", "running", T0), steps) is None
    assert eta_s(RunInfo(1, "r", "running", T0, max_steps=10), []) is None
