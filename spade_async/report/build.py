"""Read a run, write its plots and ``report.md`` into one folder."""

from __future__ import annotations

from pathlib import Path

from spade_async.report.data import read_run
from spade_async.report.markdown import summary
from spade_async.report.plots import write_plots
from spade_async.util.steps import DB_NAME

REPORT_NAME = "report.md"


def build_report(run_dir: Path, out: Path | None = None) -> list[Path]:
    """Write ``report.md`` and every PNG into ``out`` (default ``run_dir/report``); returns them."""
    out = out if out is not None else run_dir / "report"
    data = read_run(run_dir / DB_NAME)
    files = write_plots(data, out)
    md = out / REPORT_NAME
    md.write_text(summary(data, run_dir), encoding="utf-8")
    return [md, *files]
