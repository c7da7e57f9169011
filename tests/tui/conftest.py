"""Fixtures for the TUI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.fixture_db import build_fixture_db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return build_fixture_db(tmp_path / "run.sqlite")
