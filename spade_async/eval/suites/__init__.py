"""Evaluation suites as a registry: :mod:`.registry` holds the protocol and the name -> factory
table; each built-in suite is a module of this package that registers itself on import
(:mod:`.games`, :mod:`.reasoning`, :mod:`.lm_eval_suite`). A new suite is a new module here plus one import line.
"""

from spade_async.eval.suites import games, lm_eval_suite, reasoning
from spade_async.eval.suites.registry import (
    AnswerSuite,
    BatchScoring,
    CacheableSuite,
    EpisodeSuite,
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
    "AnswerSuite",
    "BatchScoring",
    "CacheableSuite",
    "EpisodeSuite",
    "EvalContext",
    "EvalItem",
    "ItemScore",
    "Suite",
    "SuiteError",
    "build_suite",
    "games",
    "lm_eval_suite",
    "reasoning",
    "register_suite",
    "suite_names",
]
