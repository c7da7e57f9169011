"""The report's summary names only the checkpoints still on disk (older ones are pruned by
``run.keep_checkpoints``, while the checkpoints table keeps every row)."""

from __future__ import annotations

from pathlib import Path

from spade_async.report.data import RunData
from spade_async.report.markdown import summary


def test_summary_lists_checkpoints_on_disk_and_counts_the_pruned(tmp_path: Path) -> None:
    data = RunData(name="r", status="finished")
    data.checkpoints = [5, 11, 17]  # the table's 0-based steps: folders step_6, step_12, step_18
    (tmp_path / "checkpoints" / "step_18").mkdir(parents=True)
    assert "checkpoints: step_18 (2 older pruned)" in summary(data, tmp_path)
    data.checkpoints = []
    assert "checkpoints: none" in summary(data, tmp_path)
