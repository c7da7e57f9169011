"""The snapshots pass whatever terminal the suite is started from.

Why: the environment browser's snapshot failed on fresh CI machines and passed on the
developer's: the app's colour system comes from the environment (tests/tui/conftest.py says
how), so a snapshot taken under ``TERM=xterm`` differed under ``COLORTERM=truecolor``
(line numbers ``#656660`` instead of ``#a1a19f``). This runs the snapshot tests in fresh
interpreters under each environment that changes Rich's or Textual's colour choice; without
the conftest's pinned terminal the truecolor, 256-colour, NO_COLOR and TEXTUAL_COLOR_SYSTEM
runs fail (measured).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ENVIRONMENTS = {
    "truecolor": {"COLORTERM": "truecolor"},
    "256-colours": {"TERM": "xterm-256color"},
    "no-TERM": {"TERM": None},
    "NO_COLOR": {"NO_COLOR": "1"},
    "FORCE_COLOR": {"FORCE_COLOR": "1"},
    "textual-truecolor": {"TEXTUAL_COLOR_SYSTEM": "truecolor"},
}


@pytest.mark.slow
@pytest.mark.parametrize("changes", list(ENVIRONMENTS.values()), ids=list(ENVIRONMENTS))
def test_the_snapshots_pass_under_any_terminal(changes: dict[str, str | None], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in changes}
    env.update({k: v for k, v in changes.items() if v is not None})
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "tests/tui/test_snapshots.py",
            "--basetemp",
            str(tmp_path / "pytest"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
