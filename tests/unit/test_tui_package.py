"""The TUI installs as ``spade_async_tui`` (the repository's ``tui/`` folder mapped by
pyproject.toml), so its modules import each other relatively and work under either name;
the CLI finds it installed, or in a checkout beside the library, and never takes another
project's ``tui``. (tests/e2e/test_wheel.py checks the real wheel's top-level names.)"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=path[0], timeout=300, check=False
    )


def test_tui_modules_import_each_other_relatively() -> None:
    absolute = []
    for path in sorted((ROOT / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "tui":
                absolute.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tui" for a in node.names):
                absolute.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert absolute == [], "absolute `tui.` imports break the installed spade_async_tui package"


def test_the_tui_works_under_its_installed_name(tmp_path: Path) -> None:
    """As in site-packages: spade_async + spade_async_tui, and no top-level `tui`."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "spade_async").symlink_to(ROOT / "spade_async")
    (site / "spade_async_tui").symlink_to(ROOT / "tui")
    done = _python(
        "import sys, spade_async_tui.app, spade_async.cli.app as c\n"
        "assert 'tui' not in sys.modules, 'a top-level tui was imported'\n"
        "print(c._tui_module('cli').__name__, c._tui_module('run').__name__)",
        site,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["spade_async_tui.cli", "spade_async_tui.run"]


def test_a_checkout_without_install_uses_its_own_tui_folder_only(tmp_path: Path) -> None:
    # As if never installed, whatever this venv holds: the installed name is not importable.
    uninstalled = (
        "import sys\n"
        "class Uninstalled:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'spade_async_tui':\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Uninstalled())\n"
    )
    found = _python(uninstalled + "import spade_async.cli.app as c; print(c._tui_module('cli').__file__)", ROOT)
    assert found.returncode == 0 and Path(found.stdout.strip()) == ROOT / "tui" / "cli.py", found.stderr
    foreign = tmp_path / "foreign"
    (foreign / "tui").mkdir(parents=True)
    (foreign / "tui" / "__init__.py").write_text("")
    (foreign / "tui" / "cli.py").write_text("raise SystemExit('the wrong tui was imported')\n")
    refused = _python(
        uninstalled + "import spade_async.cli.app as c\n"
        "try:\n    c._tui_module('cli')\nexcept ModuleNotFoundError as e:\n    print('refused', e.name)",
        foreign,
        ROOT,
    )
    assert refused.returncode == 0 and refused.stdout.strip() == "refused spade_async_tui", (
        refused.stdout + refused.stderr
    )
