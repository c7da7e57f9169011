"""A fresh run that starts from a warm-started adapter (``[warmstart]``).

Why in the run layer: the warm start itself (``spade_async.warmstart``) only trains and writes
a folder; making it the run's starting point touches the learner (its weights, a fresh
optimizer, version 1), the engine (the adapter goes live before the first design) and the run
folder (``warmstart/`` holds the adapter and its manifest). A result for the same key is taken
from the cache (``~/.cache/spade-async/warmstart/KEY``), or from the package when it ships that
key (``warmstart/shipped/KEY``: the main job's), instead of training again. Resume never
comes here: a checkpoint already holds the adapter it started from and everything since.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.base import Learner
from spade_async.util.errors import UserError
from spade_async.util.safetensors_check import safetensors_problem
from spade_async.warmstart.library import load_library
from spade_async.warmstart.train import (
    ADAPTER,
    MANIFEST,
    SupervisedLearner,
    cached_folder,
    read_result,
    run_warm_start,
    shipped_folder,
)

FOLDER = "warmstart"
"""The run folder's copy of what it started from."""


class WarmStartError(UserError):
    """A warm start that cannot be used as asked."""

    exit_code = 2


def wanted(cfg: Config) -> bool:
    return cfg.warmstart.enabled or cfg.warmstart.adapter is not None


def check_inputs(cfg: Config) -> None:
    """Refuse, before the model loads and before anything is written, a warm start whose inputs
    cannot serve: a given adapter folder without a whole ``adapter_model.safetensors``, or a
    library that cannot be read, or one of whose files is over ``sandbox.max_source_bytes`` or
    defines no class (read with ``ast``: nothing is run)."""
    if not wanted(cfg):
        return
    if cfg.warmstart.adapter is not None:
        weights = Path(cfg.warmstart.adapter).expanduser() / "adapter_model.safetensors"
        problem = safetensors_problem(weights) if weights.is_file() else "no adapter_model.safetensors in it"
        if problem is not None:
            raise WarmStartError(
                f"warmstart.adapter = {cfg.warmstart.adapter!r}: not a PEFT adapter folder ({problem})"
            )
        return
    for env in load_library(cfg.warmstart.library, cfg.selfplay.domain):
        size = len(env.code.encode("utf-8"))
        if size > cfg.sandbox.max_source_bytes:
            raise WarmStartError(
                f"warmstart.library: {env.name} is {size} bytes, over sandbox.max_source_bytes "
                f"({cfg.sandbox.max_source_bytes})"
            )
        try:
            tree = ast.parse(env.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise WarmStartError(f"warmstart.library: {env.name} does not parse ({exc.__class__.__name__})") from None
        if not any(isinstance(node, ast.ClassDef) for node in tree.body):
            raise WarmStartError(f"warmstart.library: {env.name} defines no environment class")


def _prepare(
    cfg: Config, engine: Engine, learner: SupervisedLearner, run_dir: Path, report: Callable[[str], None]
) -> str:
    """Fill ``run_dir/warmstart`` (from the given adapter, the cache, or by training); the line to print."""
    target = run_dir / FOLDER
    shutil.rmtree(target, ignore_errors=True)
    if cfg.warmstart.adapter is not None:
        source = Path(cfg.warmstart.adapter).expanduser()
        if not (source / "adapter_model.safetensors").is_file():
            raise WarmStartError(
                f"warmstart.adapter = {str(source)!r}: not a PEFT adapter folder (no adapter_model.safetensors)"
            )
        shutil.copytree(source, target / ADAPTER)
        (target / MANIFEST).write_text(json.dumps({"adapter": str(source)}, indent=1) + "\n")
        return f"warm start: starting from the adapter {source}"
    cached = cached_folder(cfg)
    result = read_result(cached)
    shipped = shipped_folder(cfg) if result is None else None
    if shipped is not None:
        shutil.copytree(shipped, target)
        result = read_result(shipped)
        assert result is not None  # shipped_folder only answers a folder that reads
        return f"{result.describe()} (shipped with the package: {shipped.name})"
    if result is None:
        report(f"warm start: training on the {cfg.warmstart.library} library ({cfg.warmstart.steps} steps) ...")
        result = run_warm_start(cfg, engine=engine, learner=learner, out=cached, report=report)
        line = result.describe()
    else:
        line = f"{result.describe()} (from the cache, {cached})"
    shutil.copytree(cached, target)
    return line


async def start_from_warm_start(
    cfg: Config, *, engine: Engine, learner: Learner | None, run_dir: Path, report: Callable[[str], None]
) -> str:
    """Make the warm start the run's starting point (adapter v1, live in the engine); the line
    that says what it started from (also recorded as an event)."""
    if learner is None:
        raise WarmStartError("[warmstart] needs a learner; this run has none")
    line = await anyio.to_thread.run_sync(CPU_SHARE.staged(_prepare), cfg, engine, learner, run_dir, report)
    adapter = run_dir / FOLDER / ADAPTER
    await anyio.to_thread.run_sync(learner.start_from, adapter)
    await engine.load_adapter(learner.version, str(adapter))
    report(line)
    return line
