"""Fixtures for the TUI tests, and the terminal every one of them renders for.

Why the terminal is pinned: the app's console detects its colour system from the environment
when the app is built (``TERM``, ``COLORTERM``, ``NO_COLOR``, ``FORCE_COLOR``; textual reads
``TEXTUAL_COLOR_SYSTEM`` at import). Rich's ``Syntax`` (the code view) picks its line-number
and highlight styles by that system: under ``COLORTERM=truecolor`` the line numbers are
``#656660`` and the current line bold ``#e3e3dd``, under the ``standard`` system the stored
snapshots were taken with, ``#a1a19f``. So a snapshot test passed or failed by the shell it
ran from, not by the code. Every TUI test now renders for the same terminal
(``TERM=xterm``, no colour overrides, textual's colour system ``standard``), and
``tests/tui/test_snapshot_terminal.py`` runs the snapshots in fresh interpreters under the
environments that used to break them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import textual.constants

from tests.tui.fixture_db import build_fixture_db

SNAPSHOT_TERM = "xterm"
SNAPSHOT_COLOR_SYSTEM = "standard"
COLOUR_OVERRIDES = ("COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TEXTUAL_COLOR_SYSTEM")
"""Environment variables Rich or Textual read to choose colours; none of them may leak in."""


@pytest.fixture(autouse=True)
def snapshot_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TERM", SNAPSHOT_TERM)
    for name in COLOUR_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", SNAPSHOT_COLOR_SYSTEM)
    yield


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return build_fixture_db(tmp_path / "run.sqlite")
