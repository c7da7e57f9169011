"""The one owner of a run's checkpoints: save, commit, announce, prune, and restore.

Why one owner: the lifecycle of a checkpoint was spread over a closure in ``assemble``, its
``_restore``, ``checkpoint.prune_checkpoints`` and the folder lookups of ``memory.queries``;
the order that makes a checkpoint safe (files renamed into place, *then* the database row
committed, *then* the event, *then* older checkpoints pruned) lived in none of them. Here it is
one method, :meth:`Checkpointer.save`, and its inverse, :meth:`Checkpointer.restore`, picks the
newest committed checkpoint whose folder is whole, and puts the learner, the engine's adapter,
the run's state (a :class:`Restorable`), the RNGs and the database back to that point.

The folder's format (``state.json``, ``tensors.safetensors``, the legacy ``state.pt``) is
:mod:`spade_async.run.checkpoint`'s; the run folder's paths are
:class:`spade_async.memory.run_dir.RunDir`'s. Everything else asks this module.
"""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from spade_async.config import Config, RunConfig, config_to_toml
from spade_async.engine.base import Engine
from spade_async.learner.base import Learner
from spade_async.memory.queries import checkpoint_folders
from spade_async.memory.run_dir import RunDir
from spade_async.memory.store import Store
from spade_async.run.checkpoint import (
    LEGACY_STATE_FILE,
    STATE_FILE,
    TENSORS_FILE,
    VERSION_FILE,
    CheckpointError,
    read_checkpoint,
    set_rng_states,
    write_checkpoint,
)
from spade_async.run.errors import RunError
from spade_async.util.failpoints import failpoint
from spade_async.util.safetensors_check import safetensors_problem
from spade_async.util.steps import ADAPTER_DIR, shown

Reporter = Callable[[str], None]


def config_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Restorable(Protocol):
    """What a checkpoint's snapshot is restored into (the pipeline's curriculum, corpus, ...)."""

    def restore(self, snap: dict[str, Any]) -> None: ...


PEFT_CONFIG = "adapter_config.json"
PEFT_WEIGHTS = "adapter_model.safetensors"
"""What ``save_pretrained`` of a PEFT adapter writes: a checkpoint's adapter with the one has the other."""


def checkpoint_problem(folder: Path) -> str | None:
    """Why the checkpoint folder ``folder`` is not whole (None when it is): a missing folder,
    state or tensors file, a learner's checkpoint without its adapter (or a PEFT adapter without
    its weights), or a safetensors file (its tensors, its adapter) cut short or damaged.
    (``write_checkpoint`` writes the tensors file beside every ``state.json``, and the adapter
    beside the version file.)"""
    if not folder.is_dir():
        return f"{folder} is missing"
    if not (folder / STATE_FILE).is_file() and not (folder / LEGACY_STATE_FILE).is_file():
        return f"{folder} has no {STATE_FILE}"
    if (folder / STATE_FILE).is_file() and not (folder / TENSORS_FILE).is_file():
        return f"{folder} has no {TENSORS_FILE}"
    adapter = folder / ADAPTER_DIR
    if (folder / VERSION_FILE).is_file() and not (adapter.is_dir() and any(adapter.iterdir())):
        return f"{folder} has no {ADAPTER_DIR}"
    if (adapter / PEFT_CONFIG).is_file() and not (adapter / PEFT_WEIGHTS).is_file():  # PEFT writes both
        return f"{folder} has no {ADAPTER_DIR}/{PEFT_WEIGHTS}"
    for file in sorted(folder.rglob("*.safetensors")):
        problem = safetensors_problem(file)
        if problem is not None:
            return problem
    return None


def prune_checkpoints(run_dir: Path, keep: int, committed_steps: set[int]) -> None:
    """Delete temp folders and all but the newest ``keep`` committed checkpoints
    (``committed_steps``: internal 0-based steps, as in the database)."""
    root = RunDir(Path(run_dir)).checkpoints
    if not root.is_dir():
        return
    for leftover in root.glob(".tmp-step_*"):
        shutil.rmtree(leftover, ignore_errors=True)
    folders = {number - 1: path for number, path in checkpoint_folders(run_dir).items()}  # by internal step
    newest = sorted(s for s in folders if s in committed_steps)[-keep:]
    for s, path in folders.items():
        if s not in newest:
            shutil.rmtree(path, ignore_errors=True)


def _recorded_run_dir(folder: RunDir) -> str | None:
    """``run.run_dir`` as written in the folder's config.toml (None when it cannot be read)."""
    try:
        value = tomllib.loads(folder.config.read_text(encoding="utf-8")).get("run", {}).get("run_dir")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ConfigStamp:
    """The run's config as a checkpoint records it (its hash), and the test of a checkpointed
    hash against it. The whole config, by nature: any section's change is a change."""

    cfg: Config
    text: str

    @classmethod
    def of(cls, cfg: Config) -> ConfigStamp:
        return cls(cfg, config_to_toml(cfg))

    @property
    def hash(self) -> str:
        return config_hash(self.text)

    def matches(self, checkpointed: str, folder: RunDir) -> bool:
        """Whether the config is the checkpointed one; a folder moved since (``resume D`` names
        the folder, its config.toml still the old ``run.run_dir``) is the same config."""
        if self.hash == checkpointed:
            return True
        recorded = _recorded_run_dir(folder)
        if recorded is None or recorded == self.cfg.run.run_dir:
            return False
        run = self.cfg.run.model_copy(update={"run_dir": recorded})
        return config_hash(config_to_toml(self.cfg.model_copy(update={"run": run}))) == checkpointed


class Checkpointer:
    """The checkpoints of one run: :meth:`save` after a step, :meth:`restore` on resume."""

    def __init__(
        self,
        folder: RunDir,
        store: Store,
        *,
        learner: Learner | None,
        stamp: ConfigStamp,
        run: RunConfig,
    ) -> None:
        self.folder = folder
        self.store = store
        self.learner = learner
        self.stamp = stamp
        self.run = run
        """``checkpoint_every``, ``keep_checkpoints`` and ``max_steps``, read when used."""
        self.committed: set[int] = set()
        """Internal steps whose rows are committed (pruning keeps the newest ``keep`` of them)."""

    def due(self, step: int) -> bool:
        """Whether a checkpoint is taken after internal step ``step`` (every ``run.checkpoint_every``
        steps, and after the last one)."""
        return (step + 1) % self.run.checkpoint_every == 0 or step + 1 >= self.run.max_steps

    # -- save ----------------------------------------------------------------------------
    async def save(self, step: int, snapshot: dict[str, Any]) -> Path:
        """Write the checkpoint after ``step``, then commit its row, then record the event, then
        prune: a kill at any point leaves either no row or a row whose folder is whole."""
        path = await anyio.to_thread.run_sync(self._write, step, snapshot)
        failpoint("checkpoint_commit")  # folder in place, database row not yet committed
        await self.store.record_checkpoint(step, str(path))
        await self.store.record_event(
            step, "checkpoint", f"checkpoint after step {shown(step)}: checkpoints/{path.name}"
        )
        self.committed.add(step)
        self.prune()
        return path

    def _write(self, step: int, snapshot: dict[str, Any]) -> Path:
        return write_checkpoint(
            self.folder.path, step, learner=self.learner, snapshot=snapshot, config_hash=self.stamp.hash
        )

    def prune(self) -> None:
        prune_checkpoints(self.folder.path, self.run.keep_checkpoints, self.committed)

    # -- restore --------------------------------------------------------------------------
    async def newest_whole(self, report: Reporter) -> tuple[int, Path] | None:
        """The newest committed checkpoint whose folder is whole, as ``(step, folder in run_dir)``.

        The folder is looked for in the run folder by its name, whatever path the row recorded:
        a run folder moved or copied elsewhere resumes from its own checkpoints, never the
        original's. A damaged newer one is reported and skipped (resume then truncates the rows
        after the one it uses, and the step is trained and checkpointed again)."""
        skipped: list[str] = []
        found: tuple[int, Path] | None = None
        for step, recorded in sorted(await self.store.checkpoints(), reverse=True):
            folder = self.folder.checkpoints / Path(recorded).name
            problem = await anyio.to_thread.run_sync(checkpoint_problem, folder)
            if problem is None:
                found = (step, folder)
                break
            skipped.append(f"checkpoints/{folder.name} ({problem})")
        for line in skipped:
            report(f"warning: skipping a damaged checkpoint: {line}")
        return found

    async def restore(self, target: Restorable, engine: Engine, *, force: bool, report: Reporter) -> int:
        """Put the run back to its newest whole checkpoint; return the step to start at."""
        run_dir = self.folder.path
        await self.store.resume_run(mark_running=False)
        # A run without a checkpoint starts over (assemble._prepare_run_dir): only a concurrent writer gets here.
        if await self.store.latest_checkpoint() is None:
            raise RunError(
                f"{run_dir} has no complete checkpoint; start the run again with --resume to begin at step 1"
            )
        latest = await self.newest_whole(report)
        if latest is None:
            raise RunError(
                f"no checkpoint of {run_dir} is whole (see the warnings above); nothing was changed: restore the "
                "checkpoints folder from a backup, or start the run again in a new folder"
            )
        step, path = latest
        if step + 1 >= self.run.max_steps:  # nothing left: report it, and a finished run stays finished
            await self.store.set_run_status("finished")
            return step + 1
        state = await self._read(path, step, force)
        if self.learner is not None and state["learner"] is not None:
            self.learner.load_state_dict(state["learner"])  # adapter weights, optimizer, version
            await engine.load_adapter(self.learner.version, str(path / ADAPTER_DIR))
        target.restore(state["snapshot"])
        set_rng_states(state["rng"])
        await self.store.truncate_after(step)
        if "env_stats" in state["snapshot"]:
            await self.store.restore_environment_stats(state["snapshot"]["env_stats"])
        self.committed.update(s for s, _ in await self.store.checkpoints())  # all kept ones: pruning keeps the newest
        await self.store.set_run_status("running")
        where = f"checkpoints/{path.name}"
        await self.store.record_event(
            step, "resume", f"resumed at step {shown(step) + 1} from the checkpoint after step {shown(step)} ({where})"
        )
        report(
            f"resuming at step {shown(step) + 1} from the checkpoint after step {shown(step)} "
            f"({where}, adapter v{engine.adapter_version})"
        )
        return step + 1

    async def _read(self, path: Path, step: int, force: bool) -> dict[str, Any]:
        """The checkpoint's state, its config checked against this run's (``force``: resume with
        a changed config anyway, recorded as an event and written to config.toml)."""
        try:
            state: dict[str, Any] = await anyio.to_thread.run_sync(read_checkpoint, path)
        except CheckpointError as exc:
            raise RunError(f"cannot resume from checkpoints/{path.name}: {exc}") from None
        if not self.stamp.matches(state["config_hash"], self.folder):
            if not force:
                raise RunError(
                    f"the config differs from the one checkpointed in {self.folder.path}; "
                    "pass --force to resume with it anyway"
                )
            await self.store.record_event(step, "info", "resumed with a changed config (--force)")
            await anyio.Path(self.folder.config).write_text(self.stamp.text)
        return state
