"""An import-linter contract type of our own: ``allowed``, an allow-list.

Why: import-linter's ``forbidden`` contract is a deny-list, and a deny-list of what the sandbox
child must not import silently goes stale: a new package of the library, or a new third-party
dependency, is allowed until someone remembers to add it (when the child's list became this
contract it missed four of the library's packages: adapter_check, envlib, served_base and
warmstart, and every third-party dependency but the fifteen it named). An allow-list fails the
other way: anything new that the child reaches is a broken contract until it is named.

Registered in ``[tool.importlinter]`` of pyproject.toml (``contract_types``) and run by
``lint-imports`` from the repository root, which puts the working directory first on
``sys.path`` (so this module is found as ``tests.import_contracts``). It imports nothing of the
library. tests/unit/test_import_contract.py checks that it holds and that it can fail.
"""

from __future__ import annotations

import sys
from typing import Any

import grimp
from importlinter import Contract, ContractCheck, fields, output


def _matches(module: str, names: set[str]) -> bool:
    """Whether ``module`` is one of ``names`` or inside one of them."""
    return any(module == n or module.startswith(n + ".") for n in names)


class AllowedImportsContract(Contract):
    """``source_modules`` (each with its descendants) import, directly or through any chain of
    imports, only ``allowed_modules`` (a name allows the module and everything inside it),
    their own descendants, and, with ``allow_stdlib`` (default true), the standard library
    (``sys.stdlib_module_names`` of the interpreter running the check).

    Needs ``include_external_packages = true`` so that third-party and standard-library
    imports are in the graph (as their top-level names).
    """

    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.StringField())
    allow_stdlib = fields.BooleanField(required=False, default=True)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        allowed = set(self.allowed_modules)  # type: ignore[call-overload]
        if self.allow_stdlib:
            allowed |= set(sys.stdlib_module_names)
        illegal: list[dict[str, Any]] = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            inside = {source.name} | graph.find_descendants(source.name)
            reached = graph.find_upstream_modules(source.name, as_package=True) - inside
            for module in sorted(reached):
                if _matches(module, allowed):
                    continue
                chains = graph.find_shortest_chains(importer=source.name, imported=module, as_packages=True)
                chain = min(chains, key=lambda c: (len(c), c)) if chains else (source.name, module)
                illegal.append({"source": source.name, "module": module, "chain": list(chain)})
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["illegal"]:
            output.print_error(f"{item['source']} is not allowed to import {item['module']}:")
            output.new_line()
            output.indent_cursor()
            output.print_error(" -> ".join(item["chain"]), bold=False)
            output.new_line()
