"""The package's import graph has no cycles across packages, and configuration imports no stage.

Why: a cycle makes import order matter (a half-initialised module at import time) and ties
layers together; ``config`` is read by every stage, so it must not import one. The graph
is read with ``ast`` (nothing is imported), counting every import, deferred ones inside
functions included; imports under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.run.assemble import RunError, check_eval_suite

PKG = Path(__file__).resolve().parents[2] / "spade_async"


def module_names() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path, modules: dict[str, Path], *, deferred: bool = True) -> set[str]:
    """The package modules ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``);
    ``deferred=False`` leaves out imports inside functions."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not deferred and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
        else:
            names = []
        for name in names:
            target = known(name) if name.startswith("spade_async") else None
            if target and target != module:
                found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def import_graph(*, deferred: bool = True) -> dict[str, set[str]]:
    modules = module_names()
    return {m: imports_of(m, p, modules, deferred=deferred) for m, p in modules.items()}


def package_of(module: str) -> str:
    """``spade_async.eval.suites.games`` -> ``spade_async.eval``; top-level modules are their own package."""
    parts = module.split(".")
    return ".".join(parts[:2])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycles() -> None:
    """None at import time; counting deferred imports too, none across packages. The one kind
    left: a registry that loads its own package's plugins on first use (``eval.suites`` loading
    ``eval.games`` and ``eval.reasoning``, which register themselves with it)."""
    at_import = import_graph(deferred=False)
    assert "spade_async.config" in at_import["spade_async.run.pipeline"]
    assert cycles(at_import) == []
    for cycle in cycles(import_graph()):
        assert len({package_of(m) for m in cycle}) == 1, f"import cycle across packages: {cycle}"


def test_configuration_imports_no_stage() -> None:
    """``spade_async.config`` (a package: sections, load, presets) imports only itself and ``util``."""
    graph = import_graph()
    config_modules = [m for m in graph if m == "spade_async.config" or m.startswith("spade_async.config.")]
    assert len(config_modules) >= 3
    for module in config_modules:
        outside = {t for t in graph[module] if package_of(t) not in ("spade_async.config", "spade_async.util")}
        assert outside == set(), f"{module} imports {outside}"


def test_an_unknown_eval_suite_is_refused_before_the_run() -> None:
    cfg = Config.model_validate({"eval": {"every": 10, "suite": "gamez:easy"}})  # loads: config checks no stage
    with pytest.raises(RunError, match=r"eval\.suite: unknown suite 'gamez'; choose from"):
        check_eval_suite(cfg)
    check_eval_suite(Config.model_validate({"eval": {"every": 10, "suite": "games:easy"}}))
    check_eval_suite(Config.model_validate({"eval": {"every": 0, "suite": "gamez"}}))  # off: not built
