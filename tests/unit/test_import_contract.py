"""The import contract of ``[tool.importlinter]`` in pyproject.toml holds, and can fail.

Why a test as well as ``make lint``: the contract (layers, no TUI in the library, what the
sandbox child may import, no cycles) is part of the architecture, so a change that breaks it
fails with the unit tests too. The second half runs the same tool on deliberately false
contracts against the real package, so a misconfigured run (nothing analysed, contracts not
found) cannot pass unnoticed. ``--no-cache``: nothing is written outside ``tmp_path``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(config: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} missing: pip install -e '.[dev]' (import-linter)"
    # From the repository root: lint-imports puts the working directory first on sys.path, so
    # it reads this checkout's spade_async/ and tui/, not an installed copy.
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_import_contract_holds() -> None:
    result = lint_imports(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", result.stdout)
    assert kept is not None and int(kept[1]) >= 4, result.stdout


def test_a_false_contract_fails(tmp_path: Path) -> None:
    """The memory layer imports util (e.g. ``memory.queries`` reads ``util.steps``), so a
    contract putting util above memory, or forbidding the sandbox child its own protocol
    module, must be reported broken."""
    config = tmp_path / "contract.toml"
    config.write_text(
        """
[tool.importlinter]
root_packages = ["spade_async"]

[[tool.importlinter.contracts]]
id = "false-layers"
name = "util above memory (false)"
type = "layers"
containers = ["spade_async"]
layers = ["util", "memory"]

[[tool.importlinter.contracts]]
id = "false-child"
name = "the sandbox child without its protocol (false)"
type = "forbidden"
source_modules = ["spade_async.sandbox.child"]
forbidden_modules = ["spade_async.sandbox.protocol"]
""",
        encoding="utf-8",
    )
    result = lint_imports(config)
    assert result.returncode != 0, result.stdout
    assert "Contracts: 0 kept, 2 broken" in result.stdout, result.stdout
    assert "spade_async.memory is not allowed to import spade_async.util" in result.stdout, result.stdout
    assert "spade_async.sandbox.child.worker -> spade_async.sandbox.protocol" in result.stdout, result.stdout
