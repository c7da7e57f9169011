"""The overview's line charts, driven headless: what they carry, that they fill their panel
and follow a resize, and that no data, one step and hundreds of steps all render."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.color import Color
from textual.geometry import Region

from tests.tui.fixture_db import N_STEPS, build_fixture_db, step_metrics
from tests.tui.helpers import legend_value, make_app, settle, text_of
from tui.widgets.plots import ChartPanel, LineChart

pytestmark = pytest.mark.anyio
SIZE = (120, 40)
ARMS = ("mean regret", "hint-arm return", "plain-arm return")


def _lines(chart: LineChart) -> list[str]:
    return text_of(chart).splitlines()


def _line_colors(chart: LineChart) -> set[str]:
    """The colours of the braille cells the chart drew, as #rrggbb."""
    colors = set()
    for strip in chart.render_lines(Region(0, 0, chart.size.width, chart.size.height)):
        for seg in strip:
            color = seg.style.color if seg.style else None
            if color is not None and any(0x2800 < ord(ch) < 0x2900 for ch in seg.text):
                colors.add(Color.from_rich_color(color).hex.lower())
    return colors


async def test_regret_and_both_arms_share_one_chart(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panel = app.query_one("#chart-regret", ChartPanel)
        series = panel.chart.series
        assert [s.label for s in series] == list(ARMS)
        assert len({s.color for s in series}) == 3
        steps = tuple(range(1, N_STEPS + 1))  # counted from 1, like the header
        for s, key in zip(series, ("regret_mean", "hint_return_mean", "plain_return_mean"), strict=True):
            assert s.steps == steps
            assert s.values == tuple(step_metrics(i)[key] for i in range(N_STEPS))
        agent = app.query_one("#chart-agent", ChartPanel).chart.series
        assert [s.label for s in agent] == ["agent mean return", "learnable fraction"]
        assert agent[1].values[-1] == step_metrics(N_STEPS - 1)["learnable_fraction"]

        # The legend carries every series with its exact latest value, min and max.
        legend = text_of(panel.query_one(".legend"))
        assert [legend_value(app, "#chart-regret", label) for label in ARMS] == ["0.650", "0.750", "0.550"]
        assert "min 0.10  max 0.65" in legend and "min 0.00  max 0.55" in legend

        # Axes: y ticks on the fixed [0, 1] scale, x ticks are step numbers up to the newest.
        lines = _lines(panel.chart)
        y_labels = [line.split("┤")[0].strip() for line in lines if "┤" in line]
        assert y_labels[0] == "1.00" and y_labels[-1] == "0.00" and "0.50" in y_labels
        x_labels = lines[-2].split()
        assert x_labels[-1] == str(N_STEPS) and all(label.isdigit() for label in x_labels)
        assert lines[-1].strip() == "step"
        assert _line_colors(panel.chart) == {s.color for s in series}  # three lines, legend colours


async def test_charts_fill_their_panel_and_follow_a_resize(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        plots = app.query_one("#plots")
        panels = list(app.query(ChartPanel))

        def check() -> None:
            assert sum(p.outer_size.height for p in panels) == plots.content_size.height
            for p in panels:
                legend = p.query_one(".legend")
                assert p.chart.size.width == plots.content_size.width
                assert p.chart.size.height == p.size.height - legend.size.height
                lines = _lines(p.chart)
                assert len(lines) == p.chart.size.height
                assert max(len(line) for line in lines) == p.chart.size.width  # the frame spans it

        check()
        before = panels[0].chart.size
        await pilot.resize_terminal(160, 50)
        await settle(app, pilot)
        after = panels[0].chart.size
        assert after.width > before.width and after.height > before.height
        check()
        x_labels = _lines(panels[0].chart)[-2].split()
        assert len(x_labels) > 3  # a wider chart gets more step labels


@pytest.mark.parametrize("n_steps", [0, 1, 500])
async def test_no_data_one_step_and_hundreds_of_steps_render(tmp_path: Path, n_steps: int) -> None:
    db = build_fixture_db(tmp_path / "run.sqlite", n_steps=n_steps)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panel = app.query_one("#chart-regret", ChartPanel)
        assert all(len(s.values) == n_steps for s in panel.chart.series)
        lines = _lines(panel.chart)
        legend = text_of(panel.query_one(".legend"))
        if n_steps == 0:
            assert legend.count("no data yet") == 3
            assert any("no data yet" in line for line in lines)
        elif n_steps == 1:
            assert legend_value(app, "#chart-regret", "mean regret") == f"{step_metrics(0)['regret_mean']:.3f}"
            assert "●" in "".join(lines)  # a lone point is a visible marker, not one braille dot
            assert "1" in lines[-2].split()
        else:
            last = step_metrics(n_steps - 1)["regret_mean"]
            assert legend_value(app, "#chart-regret", "mean regret") == f"{last:.3f}"
            assert lines[-2].split()[-1] == str(n_steps)
            assert len(lines) == panel.chart.size.height
