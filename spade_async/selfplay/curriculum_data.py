"""The curriculum's checkpoint state as plain data, and back (no pickles, no class names).

``Curriculum.state()`` holds live objects (:class:`LiveEnv` with its :class:`Design`, the
design's job, document, memory examples, completion, validation result and promise). A
checkpoint stores them as JSON: each class has an explicit ``*_to_data`` / ``*_from_data``
pair below, and the loader builds only these classes, field by field (a field missing from
the data takes its default; one the class no longer has is ignored). Nothing in the file
names a class or a module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from spade_async.admission.validate import Promise, ValidationResult
from spade_async.engine.base import Completion
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.selfplay.curriculum import LiveEnv
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import Design, DesignJob
from spade_async.selfplay.design.similarity import Nearest
from spade_async.util.rng_data import python_random_from_data, python_random_to_data

T = TypeVar("T")
Converter = Callable[[Any], Any]


class StateDataError(ValueError):
    """Checkpoint data that does not fit the schema (a damaged or foreign file)."""


def _plain(value: Any) -> Any:
    """JSON types only: tuples become lists; dict keys must be strings."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise StateDataError(f"a dict with non-string keys cannot be stored as plain data: {list(value)[:3]!r}")
        return {k: _plain(v) for k, v in value.items()}
    raise StateDataError(f"{type(value).__name__} is not plain data")


def _value_of(obj: Any, name: str, default: Any, factory: Any) -> Any:
    """An attribute, or its field default when an object unpickled from an older class lacks it."""
    if name in getattr(obj, "__dict__", {}) or not hasattr(obj, "__dict__"):
        return getattr(obj, name)
    if default is not MISSING:
        return default
    if factory is not MISSING:
        return factory()
    raise StateDataError(f"{type(obj).__name__} has no field {name!r}")


def _to_data(obj: Any, cls: type, nested: dict[str, Converter] | None = None) -> dict[str, Any]:
    if not isinstance(obj, cls):
        raise StateDataError(f"expected a {cls.__name__}, got {type(obj).__name__}")
    nested = nested or {}
    out: dict[str, Any] = {}
    for f in fields(cls):
        value = _value_of(obj, f.name, f.default, f.default_factory)
        out[f.name] = nested[f.name](value) if f.name in nested and value is not None else _plain(value)
    return out


def _from_data(cls: type[T], data: Any, nested: dict[str, Converter] | None = None) -> T:
    if not isinstance(data, dict):
        raise StateDataError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    nested = nested or {}
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kwargs = {k: nested[k](v) if k in nested and v is not None else v for k, v in data.items() if k in known}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise StateDataError(f"{cls.__name__}: {exc}") from None


def _many(convert: Converter) -> Converter:
    return lambda values: [convert(v) for v in values]


# -- one pair per class -------------------------------------------------------------------
def completion_to_data(c: Completion) -> dict[str, Any]:
    return _to_data(c, Completion)


def completion_from_data(data: Any) -> Completion:
    return _from_data(Completion, data)


def document_to_data(d: Document) -> dict[str, Any]:
    return _to_data(d, Document)


def document_from_data(data: Any) -> Document:
    return _from_data(Document, data)


def env_record_to_data(r: EnvRecord) -> dict[str, Any]:
    return _to_data(r, EnvRecord)


def env_record_from_data(data: Any) -> EnvRecord:
    return _from_data(EnvRecord, data)


def example_to_data(e: Example) -> dict[str, Any]:
    return _to_data(e, Example, {"env": env_record_to_data})


def example_from_data(data: Any) -> Example:
    return _from_data(Example, data, {"env": env_record_from_data})


def design_job_to_data(j: DesignJob) -> dict[str, Any]:
    return _to_data(
        j, DesignJob, {"doc": document_to_data, "parent": env_record_to_data, "examples": _many(example_to_data)}
    )


def design_job_from_data(data: Any) -> DesignJob:
    return _from_data(
        DesignJob,
        data,
        {"doc": document_from_data, "parent": env_record_from_data, "examples": _many(example_from_data)},
    )


def promise_to_data(p: Promise) -> dict[str, Any]:
    return _to_data(p, Promise)


def promise_from_data(data: Any) -> Promise:
    return _from_data(
        Promise,
        data,
        {
            "seed": int,
            "actions": lambda actions: tuple(str(a) for a in actions),
            "answers": lambda answers: tuple((str(o), float(r), bool(t), bool(u)) for o, r, t, u in answers),
        },
    )


def validation_to_data(v: ValidationResult) -> dict[str, Any]:
    return _to_data(v, ValidationResult, {"promise": promise_to_data})


def validation_from_data(data: Any) -> ValidationResult:
    return _from_data(ValidationResult, data, {"promise": promise_from_data})


def nearest_to_data(n: Nearest) -> dict[str, Any]:
    return _to_data(n, Nearest)


def nearest_from_data(data: Any) -> Nearest:
    return _from_data(Nearest, data)


def design_to_data(d: Design) -> dict[str, Any]:
    return _to_data(
        d,
        Design,
        {
            "job": design_job_to_data,
            "completion": completion_to_data,
            "validation": validation_to_data,
            "nearest": nearest_to_data,
        },
    )


def design_from_data(data: Any) -> Design:
    return _from_data(
        Design,
        data,
        {
            "job": design_job_from_data,
            "completion": completion_from_data,
            "validation": validation_from_data,
            "nearest": nearest_from_data,
        },
    )


def _outcomes_to_data(per_step: dict[int, list[float]]) -> dict[str, list[float]]:
    return {str(int(step)): [float(o) for o in outcomes] for step, outcomes in per_step.items()}


def _outcomes_from_data(data: dict[str, list[float]]) -> dict[int, list[float]]:
    return {int(step): [float(o) for o in outcomes] for step, outcomes in data.items()}


def live_env_to_data(e: LiveEnv) -> dict[str, Any]:
    return _to_data(e, LiveEnv, {"design": design_to_data, "plain": _outcomes_to_data, "hinted": _outcomes_to_data})


def live_env_from_data(data: Any) -> LiveEnv:
    return _from_data(
        LiveEnv, data, {"design": design_from_data, "plain": _outcomes_from_data, "hinted": _outcomes_from_data}
    )


# -- the whole curriculum state ---------------------------------------------------------------
def curriculum_state_to_data(state: dict[str, Any]) -> dict[str, Any]:
    """``Curriculum.state()`` as JSON types (also accepts a legacy state without the audit's
    ``expelled``, the steering keys or the design prompts' RNG)."""
    steering = state.get("steering", {})
    band = steering.get("band")
    envs = _many(live_env_to_data)
    design_rng = state.get("design_rng")
    return {
        "rng": python_random_to_data(state["rng"]),
        **({} if design_rng is None else {"design_rng": python_random_to_data(design_rng)}),
        "skill_cycle": [str(s) for s in state["skill_cycle"]],
        "live": envs(state["live"]),
        "rejected": _many(design_to_data)(state["rejected"]),
        "expelled": envs(state.get("expelled", [])),
        "generation": int(state["generation"]),
        "steering": {
            "pinned": sorted(str(s) for s in steering.get("pinned", ())),
            "retired_early": envs(steering.get("retired_early", [])),
            "design_share": float(steering.get("design_share", 1.0)),
            "band": None if band is None else [float(band[0]), float(band[1])],
            "joining": envs(steering.get("joining", [])),
            "retired_by_hand": sorted(str(s) for s in steering.get("retired_by_hand", ())),
        },
    }


def curriculum_state_from_data(data: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`curriculum_state_to_data`: a state ``Curriculum.load_state`` takes."""
    try:
        steering = data["steering"]
        band = steering["band"]
        envs = _many(live_env_from_data)
        design_rng = data.get("design_rng")  # absent from checkpoints written before it
        return {
            "rng": python_random_from_data(data["rng"]),
            **({} if design_rng is None else {"design_rng": python_random_from_data(design_rng)}),
            "skill_cycle": [str(s) for s in data["skill_cycle"]],
            "live": envs(data["live"]),
            "rejected": _many(design_from_data)(data["rejected"]),
            "expelled": envs(data["expelled"]),
            "generation": int(data["generation"]),
            "steering": {
                "pinned": [str(s) for s in steering["pinned"]],
                "retired_early": envs(steering["retired_early"]),
                "design_share": float(steering["design_share"]),
                "band": None if band is None else (float(band[0]), float(band[1])),
                "joining": envs(steering["joining"]),
                "retired_by_hand": [str(s) for s in steering["retired_by_hand"]],
            },
        }
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, StateDataError):
            raise
        raise StateDataError(f"curriculum state does not fit the schema: {exc!r}") from None
