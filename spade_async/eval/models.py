"""Which models an evaluation compares: the base, checkpoints of a run, adapter folders.

Why a module: ``--step 12``, ``--step last``, ``--adapter PATH`` (a PEFT folder or a
checkpoint folder holding one) must all resolve to a PEFT adapter folder, or fail with one
line that says what exists instead. ``--step N`` is the checkpoint taken after step N as the
console counts it (from 1): ``RUN_DIR/checkpoints/step_N`` (in a run written before this
numbering, whose folders were named from 0, ``step_{N-1}``; see spade_async.util.steps).
"""

from __future__ import annotations

from pathlib import Path

from spade_async.eval.runner import BASE, ModelSpec
from spade_async.memory.queries import checkpoint_folders
from spade_async.util.errors import UserError
from spade_async.util.steps import ADAPTER_DIR

ADAPTER_FILE = "adapter_config.json"


class ModelSpecError(UserError):
    """An adapter or checkpoint that cannot be evaluated; the message names it and the fix."""

    exit_code = 2  # bad input, like a usage error


def _adapter_checkpoints(run_dir: Path) -> dict[int, Path]:
    """Checkpoint folders holding an adapter, by step number (from 1, as the console counts)."""
    return {n: folder for n, folder in checkpoint_folders(run_dir).items() if (folder / ADAPTER_DIR).is_dir()}


def checkpoint_steps(run_dir: Path) -> list[int]:
    """Step numbers (from 1) of the checkpoints of ``run_dir`` that hold an adapter, oldest first."""
    return list(_adapter_checkpoints(run_dir))


def adapter_folder(path: Path) -> Path:
    """``path`` itself when it is a PEFT folder, else its ``adapter/`` subfolder (a checkpoint)."""
    for candidate in (path, path / ADAPTER_DIR):
        if (candidate / ADAPTER_FILE).is_file():
            return candidate
    raise ModelSpecError(f"{path}: no PEFT adapter here (no {ADAPTER_FILE}, nor {ADAPTER_DIR}/{ADAPTER_FILE})")


def step_adapter(run_dir: Path, step: str) -> ModelSpec:
    """The adapter of the checkpoint after step ``step`` (from 1) or ``last``; labelled ``step_N``
    with the same number (``ModelSpec.step`` is the database's 0-based index)."""
    found = _adapter_checkpoints(run_dir)
    if not found:
        raise ModelSpecError(f"{run_dir} has no checkpoint with an adapter; train first, or pass --adapter PATH")
    if step == "last":
        n = max(found)
    elif step.isdigit() and int(step) in found:
        n = int(step)
    elif not step.isdigit():
        raise ModelSpecError(f"--step {step}: not a step number; available: {', '.join(map(str, found))} (or 'last')")
    else:
        raise ModelSpecError(
            f"--step {step}: no checkpoint after step {step} in {run_dir}/checkpoints; "
            f"available: {', '.join(map(str, found))} (or 'last')"
        )
    return ModelSpec(f"step_{n}", str(adapter_folder(found[n])), n - 1)


def resolve_models(run_dir: Path | None, adapters: tuple[str, ...], steps: tuple[str, ...]) -> list[ModelSpec]:
    """The base first, then each ``--step`` and ``--adapter`` (default with a run: its newest checkpoint)."""
    models = [ModelSpec(BASE)]
    if steps and run_dir is None:
        raise ModelSpecError("--step needs a RUN_DIR (the run whose checkpoints to use)")
    if run_dir is not None and not steps and not adapters and checkpoint_steps(run_dir):
        steps = ("last",)
    for step in steps:
        models.append(step_adapter(run_dir, step))  # type: ignore[arg-type]  # checked above
    for raw in adapters:
        path = Path(raw)
        if not path.exists():
            raise ModelSpecError(f"--adapter {raw}: no such folder")
        models.append(
            ModelSpec(
                path.resolve().name if path.name != ADAPTER_DIR else path.resolve().parent.name,
                str(adapter_folder(path)),
            )
        )
    labels = [m.label for m in models]
    for i, m in enumerate(models):  # two adapters named alike (two runs' step_5): make labels unique
        if labels.count(m.label) > 1:
            models[i] = ModelSpec(f"{m.label}#{i}", m.adapter, m.step)
    return models
