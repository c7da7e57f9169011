"""Writes one environment's code to a standalone .py file.

Why a comment header: the exported file stays runnable as-is, while still recording where
it came from (id, skill, scores) and its privileged hint.
"""

from __future__ import annotations

import re
from pathlib import Path

from .reader import EnvDetail
from .stats import fmt_num


def export_filename(detail: EnvDetail) -> str:
    skill = re.sub(r"[^a-z0-9]+", "_", (detail.summary.skill or "env").lower()).strip("_")
    return f"{skill or 'env'}_{detail.summary.id[:12]}.py"


def export_env(detail: EnvDetail, directory: Path) -> Path:
    """Write ``detail``'s code under ``directory`` (created if needed) and return the path."""
    s = detail.summary
    header = [
        f"# SPADE environment {s.id}",
        f"# skill: {s.skill or '-'}  domain: {s.domain}  origin: {s.origin}  status: {s.status}",
        f"# created at step {s.created_step + 1}; win rate {fmt_num(s.win_rate)}, "
        f"hinted {fmt_num(s.hint_win_rate)}, regret {fmt_num(s.regret)}",
        f"# document: {detail.doc_title or '-'}",
        *[f"# hint: {line}" for line in (detail.hint or "-").splitlines() or ["-"]],
        "",
    ]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / export_filename(detail)
    code = detail.code if detail.code.endswith("\n") else detail.code + "\n"
    path.write_text("\n".join(header) + "\n" + code, encoding="utf-8")
    return path
