"""The package layout in README.md and docs/architecture.md is generated (scripts/layout.py)
from the import contract's tiers and the package docstrings, and must be up to date."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _layout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout_script", ROOT / "scripts" / "layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


layout = _layout()


def test_the_committed_layout_blocks_are_up_to_date() -> None:
    assert layout.stale() == [], "the layout block is stale: run `python scripts/layout.py --write` (or `make docs`)"


def test_the_layout_names_every_package_once_in_its_tier() -> None:
    block = layout.render()
    packages = [p for p in (ROOT / "spade_async").rglob("__init__.py") if "__pycache__" not in p.parts]
    assert len(packages) > 20
    for init in packages:
        if init.parent.name != "spade_async":
            assert f"{init.parent.name}/ " in block, init.parent
    assert "tui/ " in block and "widgets/ " in block
    for tier in layout.tiers():
        heading = next(line for line in block.splitlines() if line.endswith(": " + ", ".join(tier)))
        assert heading.lstrip().startswith("-- tier")
    assert "  -- tier 1 (bottom): envs, util" in block  # the bottom tier first: each imports only what is above it


def test_every_package_has_a_docstring_summary() -> None:
    """The layout's text is each package's docstring: a package without one shows nothing."""
    missing = [
        str(init.parent.relative_to(ROOT))
        for root in ("spade_async", "tui")
        for init in (ROOT / root).rglob("__init__.py")
        if "__pycache__" not in init.parts and not layout.summary(init.parent)
    ]
    assert missing == []


def test_a_stale_block_is_found_and_rewritten(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for name in ("pyproject.toml",):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    for root in ("spade_async", "tui"):
        for init in (ROOT / root).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            target = tmp_path / init.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(init.read_text(encoding="utf-8"), encoding="utf-8")
    for name in layout.DOCS:
        (tmp_path / name).write_text(f"# x\n\n{layout.BEGIN}\nold\n{layout.END}\n\nafter\n", encoding="utf-8")
    assert layout.stale(tmp_path) == list(layout.DOCS)
    for name in layout.DOCS:
        path = tmp_path / name
        path.write_text(layout.replace_block(path.read_text(encoding="utf-8"), layout.render(tmp_path), name))
    assert layout.stale(tmp_path) == []
    assert (tmp_path / "README.md").read_text(encoding="utf-8").endswith(f"```\n{layout.END}\n\nafter\n")
    (tmp_path / "README.md").write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no layout markers"):
        layout.stale(tmp_path)
