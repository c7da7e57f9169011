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
import tomllib
from pathlib import Path
from typing import Any

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
    assert kept is not None and int(kept[1]) >= 5, result.stdout


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_the_layers_are_tiers_and_the_tui_sits_above_the_library() -> None:
    """Every subpackage has one place; siblings of a tier (``a | b``) are independent; the TUI
    is a layer above the whole library (it may import it; the library never imports it)."""
    layers = contracts()["layers"]["layers"]
    names = [name.strip() for tier in layers for name in tier.split("|")]
    assert len(names) == len(set(names))
    packages = {p.name for p in (ROOT / "spade_async").iterdir() if (p / "__init__.py").is_file()}
    assert set(names) == packages
    assert len(layers) < len(names)  # tiers, not one package a line
    assert contracts()["tui-above-library"]["layers"] == ["tui", "spade_async"]


def test_the_sandbox_child_has_an_allow_list() -> None:
    """An allow-list, not a deny-list: a package added to the library, or a new third-party
    dependency, is forbidden to the child until named here."""
    child = contracts()["sandbox-child"]
    assert child["type"] == "allowed"
    assert "forbidden_modules" not in child
    assert set(child["allowed_modules"]) == {
        "spade_async.envs.contract",
        "spade_async.envs.tool_calls",
        "spade_async.sandbox.cleanup",
        "spade_async.sandbox.protocol",
        "msgspec",
        "pyseccomp",
    }


def test_the_sandbox_child_imports_at_run_time_only_what_it_is_allowed() -> None:
    """The contract reads import statements; this imports the child's modules in a fresh
    interpreter, as the zygote does, and checks every module then loaded (dynamic imports
    included) against the same allow-list, the standard library and the allowed modules'
    parent packages. The allowed third-party packages are imported first: what they load
    themselves is theirs to choose."""
    child = contracts()["sandbox-child"]
    allowed = set(child["allowed_modules"]) | {child["source_modules"][0]}
    parents = {name.rsplit(".", i)[0] for name in allowed for i in range(1, name.count(".") + 1)}
    third_party = [a for a in allowed if not a.startswith("spade_async")]
    code = (
        "import sys\n"
        f"import {', '.join(third_party)}\n"  # with what they load themselves (msgspec: typing_extensions)
        "before = set(sys.modules)\n"
        "import spade_async.sandbox.child.zygote, spade_async.sandbox.child.worker\n"
        "import spade_async.sandbox.child.harden, spade_async.sandbox.child.landlock\n"
        "import spade_async.sandbox.child.seccomp\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = result.stdout.split()
    assert "spade_async.sandbox.protocol" in loaded and "spade_async.envs.contract" in loaded, loaded

    def ok(module: str) -> bool:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top.lstrip("_") in sys.stdlib_module_names or module in parents:
            return True
        return any(module == a or module.startswith(a + ".") for a in allowed)

    assert [m for m in loaded if not ok(m)] == []


def test_a_false_contract_fails(tmp_path: Path) -> None:
    """The memory layer imports util (e.g. ``memory.queries`` reads ``util.steps``), so a
    contract putting util above memory, forbidding the sandbox child its own protocol
    module, or leaving msgspec (which the protocol imports) off its allow-list, must be
    reported broken."""
    config = tmp_path / "contract.toml"
    config.write_text(
        """
[tool.importlinter]
root_packages = ["spade_async"]
include_external_packages = true
contract_types = ["allowed: tests.import_contracts.AllowedImportsContract"]

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

[[tool.importlinter.contracts]]
id = "false-allowed"
name = "the sandbox child allowed all it needs but msgspec (false)"
type = "allowed"
source_modules = ["spade_async.sandbox.child"]
allowed_modules = [
    "spade_async.envs.contract",
    "spade_async.envs.tool_calls",
    "spade_async.sandbox.cleanup",
    "spade_async.sandbox.protocol",
    "pyseccomp",
]
""",
        encoding="utf-8",
    )
    result = lint_imports(config)
    assert result.returncode != 0, result.stdout
    assert "Contracts: 0 kept, 3 broken" in result.stdout, result.stdout
    assert "spade_async.memory is not allowed to import spade_async.util" in result.stdout, result.stdout
    assert "spade_async.sandbox.child.worker -> spade_async.sandbox.protocol" in result.stdout, result.stdout
    assert "spade_async.sandbox.child is not allowed to import msgspec" in result.stdout, result.stdout
    assert re.search(r"spade_async\.sandbox\.child\.\w+ (-> \S+ )*-> msgspec", result.stdout), result.stdout
