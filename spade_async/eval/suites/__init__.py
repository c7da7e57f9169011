"""Evaluation suites as a registry: :mod:`.registry` holds the protocol and the name -> factory
table; each built-in suite is a module of this package that registers itself on import
(:mod:`.games`, :mod:`.reasoning`). A new suite is a new module here plus one import line.
"""

from spade_async.eval.suites import games, reasoning
from spade_async.eval.suites.registry import (
    EvalContext,
    EvalItem,
    ItemScore,
    Suite,
    SuiteError,
    build_suite,
    register_suite,
    suite_names,
)

__all__ = [
    "EvalContext",
    "EvalItem",
    "ItemScore",
    "Suite",
    "SuiteError",
    "build_suite",
    "games",
    "reasoning",
    "register_suite",
    "suite_names",
]
