"""The header shows a failed adapter probe as a red line until a later probe passes."""

from __future__ import annotations

import time
from pathlib import Path

from tests.tui.test_dead_owner import make_db
from tui.reader import RunReader, StepRow
from tui.widgets.header import render_header


def _header(tmp_path: Path, metrics: list[dict[str, float]]) -> str:
    tmp_path.mkdir()
    run = RunReader(make_db(tmp_path)).poll().run
    steps = [StepRow(i, i + 1, 1.0, time.time(), m) for i, m in enumerate(metrics)]
    return render_header(run, steps, time.time(), owned=True, paused=False, waiting=None).plain


def test_a_failed_probe_is_shown_and_a_passing_one_clears_it(tmp_path: Path) -> None:
    failed = {"probe_ok": 0.0, "probe_gap_mean": 0.71}
    assert "ADAPTER MISMATCH (probe gap 0.71 nats" in _header(tmp_path / "a", [failed])
    assert "ADAPTER MISMATCH" in _header(tmp_path / "b", [failed, {"loss": 0.1}])  # a step without a new adapter
    assert "ADAPTER MISMATCH" not in _header(tmp_path / "c", [failed, {"probe_ok": 1.0, "probe_gap_mean": 0.01}])
    assert "ADAPTER MISMATCH" not in _header(tmp_path / "d", [{"loss": 0.1}])  # never probed (a scripted learner)
