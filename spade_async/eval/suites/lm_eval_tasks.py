"""Which lm-evaluation-harness tasks an ``lm_eval:...`` suite runs, loaded once, or one clear error.

Why a module of its own: naming a task is where almost everything goes wrong before a model
is loaded (lm-eval not installed, a misspelt name, a data set on the Hugging Face hub that an
offline machine cannot fetch, a metric that has no per-item value to pair). Each of those
is a :class:`LmEvalError` (a :class:`SuiteError`: one line, exit status 2) that names the
task, raised when the suite is built, before the plan is printed.

A task is named three ways in ``--suite lm_eval:A,B``:

- an lm-eval task, group or tag name (``gsm8k``, ``mmlu_pro``), from lm-eval's own folder;
- a path to a task YAML file, or to a folder of them (every task defined there): the
  project's own tasks, such as ``tests/fixtures/lm_eval_task``. A relative
  ``dataset_kwargs.data_files`` in such a YAML is read relative to the YAML's folder (lm-eval
  alone reads it relative to the working directory);
- a preset of :data:`PRESETS`: ``paper`` is the SPADE paper's held-out benchmarks that lm-eval
  has a task for (docs/lm_eval.md maps each benchmark; Reasoning-Gym is the project's own
  ``reasoning_gym`` suite).

lm-eval is imported here only inside functions: the library imports without it.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_async.eval.suites.registry import SuiteError
from spade_async.util.quiet import verbose_requested

INSTALL_HINT = (
    "pip install '/path/to/spade-async[eval]' (the checkout's folder), or pip install 'lm-eval[math]==0.4.13'"
)

PRESETS: dict[str, tuple[str, ...]] = {
    # The SPADE paper's held-out benchmarks that lm-eval 0.4.x has a task for; docs/lm_eval.md
    # says which benchmark each is and which have none (AMC, LiveCodeBench v6, Reasoning-Gym).
    "paper": (
        "aime24",  # AIME 2024 (competition math)
        "aime25",  # AIME 2025
        "minerva_math500",  # MATH-500 (needs lm-eval[math]: math_verify)
        "gpqa_diamond_cot_zeroshot",  # GPQA-Diamond (a gated data set: accept its terms, huggingface-cli login)
        "mmlu_pro",  # MMLU-Pro (a group of 14 subject tasks)
    ),
}
"""``lm_eval:NAME`` for a NAME here runs these lm-eval tasks."""


class LmEvalError(SuiteError):
    """An ``lm_eval`` suite that cannot run as asked; the message names the task and the fix."""


@dataclass
class LoadedTasks:
    """The lm-eval ``Task`` objects of a suite, by task name (groups expanded to their tasks)."""

    tasks: dict[str, Any]
    names: list[str]
    """What was asked for, after presets and folders were expanded (for the suite's name)."""


def require_lm_eval(spec: str) -> str:
    """lm-eval's version, or :class:`LmEvalError` saying how to install it."""
    try:
        from importlib.metadata import version

        import lm_eval  # noqa: F401  # the real import: a broken install fails here, not later
    except ImportError as exc:
        raise LmEvalError(
            f"suite lm_eval:{spec} needs lm-evaluation-harness, which is not installed ({exc}); {INSTALL_HINT}"
        ) from None
    return version("lm-eval")


@contextmanager
def quiet_lm_eval() -> Iterator[None]:
    """lm-eval's and datasets' progress bars and info lines hidden, unless ``--verbose`` (as the
    CLI hides every library's: spade_async.util.quiet); the model's own bars are hidden by
    :func:`spade_async.eval.suites.lm_eval_suite.hflm_class`."""
    if verbose_requested():
        yield
        return
    logger = logging.getLogger("lm_eval")
    level, bars = logger.level, os.environ.get("TQDM_DISABLE")
    logger.setLevel(logging.ERROR)
    os.environ["TQDM_DISABLE"] = "1"  # tqdm's default for bars that do not pass `disable` themselves
    from datasets.utils import logging as ds_logging

    shown = ds_logging.is_progress_bar_enabled()
    ds_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = bars
        if shown:
            ds_logging.enable_progress_bar()


def split_spec(spec: str) -> list[str]:
    """``paper`` / ``a,b`` / a path -> the task specs, presets expanded, in order, no repeats."""
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        for name in PRESETS.get(part, (part,)) if part else ():
            if name not in out:
                out.append(name)
    return out


def _yaml_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _local_config(path: Path) -> dict[str, Any] | None:
    """A task YAML as lm-eval reads it, its relative ``data_files`` made absolute; None: not a task."""
    from lm_eval.tasks._yaml_loader import load_yaml

    try:
        cfg: dict[str, Any] = load_yaml(path, resolve_func=True)
    except Exception as exc:  # a YAML lm-eval cannot read: say which file and why
        raise LmEvalError(f"suite lm_eval: cannot read task file {path}: {exc}") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("task"), str):
        return None
    kwargs = cfg.get("dataset_kwargs") or {}
    files = kwargs.get("data_files")
    if files is not None:

        def absolute(f: str) -> str:
            return f if Path(f).is_absolute() or "://" in f else str((path.parent / f).resolve())

        if isinstance(files, str):
            files = absolute(files)
        elif isinstance(files, list):
            files = [absolute(f) for f in files]
        elif isinstance(files, dict):
            files = {k: absolute(v) if isinstance(v, str) else [absolute(f) for f in v] for k, v in files.items()}
        cfg["dataset_kwargs"] = {**kwargs, "data_files": files}
    return cfg


def _load_one(manager: Any, name: str, spec: str | dict[str, Any]) -> dict[str, Any]:
    """lm-eval's ``TaskManager.load`` of one spec, its failure said as one line naming ``name``."""
    try:
        loaded: dict[str, Any] = manager.load([spec])["tasks"]
    except Exception as exc:  # datasets raises many kinds: offline, gated, missing, no network
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise LmEvalError(
            f"suite lm_eval: task {name} could not load its data set ({type(exc).__name__}: {first}); "
            "it needs a download this machine cannot make (no network, HF_DATASETS_OFFLINE set, or a gated "
            "data set without a login): fetch it on a machine with network access into the Hugging Face "
            "cache, or choose a local task"
        ) from None
    return loaded


@functools.cache
def lm_eval_index() -> Any:
    """lm-eval's ``TaskManager`` over its own task folder, built once per process (~10 s)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def load_tasks(spec: str) -> LoadedTasks:
    """Every lm-eval task of ``lm_eval:spec``, built (data sets loaded), or :class:`LmEvalError`."""
    require_lm_eval(spec)
    with quiet_lm_eval():
        return _load_tasks(spec)


def _load_tasks(spec: str) -> LoadedTasks:
    from lm_eval.tasks import TaskManager

    parts = split_spec(spec)
    if not parts:
        raise LmEvalError(
            f"suite lm_eval needs task names: --suite lm_eval:TASK[,TASK] or lm_eval:{next(iter(PRESETS))}"
        )
    local: list[tuple[str, dict[str, Any]]] = []
    named: list[str] = []
    for part in parts:
        path = Path(part)
        if path.exists():
            configs = [(f, cfg) for f in _yaml_files(path) if (cfg := _local_config(f)) is not None]
            if not configs:
                raise LmEvalError(f"suite lm_eval: {part} holds no lm-eval task YAML (a file with a 'task:' key)")
            local += [(str(cfg["task"]), cfg) for _, cfg in configs]
        elif part.endswith((".yaml", ".yml")) or "/" in part:
            raise LmEvalError(f"suite lm_eval: no such task file or folder: {part}")
        else:
            named.append(part)
    tasks: dict[str, Any] = {}
    if local:  # lm-eval's own index (14k YAML files, ~10 s) only when a name needs it
        manager = TaskManager(include_defaults=False)
        for name, cfg in local:
            tasks.update(_load_one(manager, name, cfg))
    if named:
        manager = lm_eval_index()
        known = set(manager.all_tasks)
        for name in named:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise LmEvalError(
                    f"suite lm_eval: unknown task {name!r}{hint} (`lm-eval ls tasks` lists them; a local task: "
                    "give the path of its YAML file or folder)"
                )
            tasks.update(_load_one(manager, name, name))
    for name, task in tasks.items():
        primary_metric(name, task)  # refuses a task without a per-item mean, before any model runs
    return LoadedTasks(tasks, [name for name, _ in local] + named)


def primary_metric(name: str, task: Any) -> str:
    """The task's first metric (lm-eval's headline figure), checked to be a mean of per-item values."""
    from lm_eval.api.metrics import mean

    metrics = [m["metric"] for m in (task.config.metric_list or []) if isinstance(m.get("metric"), str)]
    aggregation = task.aggregation()
    if not metrics:
        metrics = list(aggregation)
    if not metrics:
        raise LmEvalError(f"suite lm_eval: task {name} names no metric")
    metric = metrics[0]
    if aggregation.get(metric) is not mean:
        how = getattr(aggregation.get(metric), "__name__", aggregation.get(metric))
        raise LmEvalError(
            f"suite lm_eval: task {name}: metric {metric} is aggregated by {how} over the whole set, not a mean "
            "of per-item values, so it has no per-item difference to pair; choose another task"
        )
    return metric


def _stable(value: Any) -> str:
    """JSON of a task config for a cache key: functions by their qualified name (no addresses)."""
    return json.dumps(value, sort_keys=True, default=lambda o: getattr(o, "__qualname__", None) or type(o).__name__)


def task_fingerprint(task: Any, doc_ids: list[int]) -> str:
    """A hash of everything in a task that decides its scores: its config and the documents used."""
    import hashlib

    config = task.config.to_dict() if hasattr(task.config, "to_dict") else dict(vars(task.config))
    docs = task.eval_docs
    digest = hashlib.sha256(_stable(config).encode())
    for i in doc_ids:
        digest.update(_stable(docs[i]).encode())
    return digest.hexdigest()[:20]
