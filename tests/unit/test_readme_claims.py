"""What the README and docs say exists is checked against the code: commands, extras, presets,
and the parts that were once "not built" and now are.

Why: the README kept saying engine replicas on other machines were not built a release after
they were, and named an install command the install section had replaced. A sentence about
what exists is a claim a test can hold.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from spade_async.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_command_the_readme_names_exists() -> None:
    named = set(re.findall(r"`spade-async ([a-z][a-z-]*)", README))
    assert named, "the README names no command"
    missing = sorted(n for n in named if n not in cli.commands)
    assert missing == [], f"README names commands that do not exist: {missing}"


@pytest.mark.parametrize("text", [README, *DOCS.values()], ids=["README.md", *DOCS])
def test_every_extra_named_exists_and_installs_from_the_checkouts_path(text: str) -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for extra in re.findall(r"(?:spade-async|\.)\[([a-z-]+)\]", text):
        assert extra in extras, f"extra [{extra}] is not in pyproject.toml"


def test_the_readme_installs_extras_the_way_its_install_section_does() -> None:
    assert "pip install /path/to/spade-async" in README
    assert "pip install -e '.[" not in README, "the README's install section names extras on the checkout's path"


def test_every_preset_is_in_the_readme_and_every_named_one_exists() -> None:
    named = set(re.findall(r"configs/([a-z0-9_]+)\.toml", README))
    files = {p.stem for p in (ROOT / "configs").glob("*.toml")}
    assert named - files == set(), f"README names presets that do not exist: {sorted(named - files)}"
    assert files - named == set(), f"presets missing from the README's table: {sorted(files - named)}"


def test_what_is_built_is_not_called_unbuilt() -> None:
    """Engine replicas on a Ray cluster exist (spade_async/cluster/engine.py): no page may say otherwise."""
    assert (ROOT / "spade_async" / "cluster" / "engine.py").is_file()
    for name, text in {"README.md": README, **DOCS}.items():
        flat = " ".join(text.split())
        assert not re.search(r"[Ee]ngine replicas[^.]*not built", flat), f"{name} calls engine replicas not built"
