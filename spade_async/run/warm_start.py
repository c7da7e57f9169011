"""A fresh run that starts from a warm-started adapter (``[warmstart]``).

Why in the run layer: the warm start itself (``spade_async.warmstart``) only trains and writes
a folder; making it the run's starting point touches the learner (its weights, a fresh
optimizer, version 1), the engine (the adapter goes live before the first design) and the run
folder (``warmstart/`` holds the adapter and its manifest). A result for the same key is taken
from the cache (``~/.cache/spade-async/warmstart/KEY``) instead of training again. Resume never
comes here: a checkpoint already holds the adapter it started from and everything since.
"""

from __future__ import annotations

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
from spade_async.warmstart.train import (
    ADAPTER,
    MANIFEST,
    SupervisedLearner,
    cached_folder,
    read_result,
    run_warm_start,
)

FOLDER = "warmstart"
"""The run folder's copy of what it started from."""


class WarmStartError(UserError):
    """A warm start that cannot be used as asked."""


def wanted(cfg: Config) -> bool:
    return cfg.warmstart.enabled or cfg.warmstart.adapter is not None


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
