"""One checkpoint folder's format: the adapter, the learner, the RNGs and the whole curriculum.

Why this order: files are written into a temporary folder, fsynced, and renamed to
``checkpoints/step_N`` (a rename is atomic on one filesystem; N is the step it was taken
after, counted from 1 as the console counts: spade_async.util.steps); only then is the row in the
``checkpoints`` table committed. A kill -9 at any moment leaves either no row (the folder,
if any, is ignored and cleaned) or a row whose folder is complete. Resume reads the newest
row, restores everything, and deletes the database rows written after that step, so no
episode or step is counted twice.

Why data, not pickles (docs/checkpoints.md has the schema): a checkpoint is ``state.json``
(versioned plain data) plus ``tensors.safetensors`` (the optimizer's moments, the learner's
adapter state and the torch RNG states), next to ``adapter/`` and ``adapter_version``.
Loading builds only known types, so moving a class does not break a saved run and a
checkpoint file cannot run code. Folders written before this format hold a pickled
``state.pt``; :func:`read_checkpoint` still loads them through an allow-list (see
:func:`_read_legacy`), and the next checkpoint of a resumed run is written in the new format.

This module is the format only (one folder, written or read); when checkpoints are taken,
committed, pruned and restored is :mod:`spade_async.run.checkpointer`'s.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from spade_async.memory.run_dir import RunDir
from spade_async.util.errors import UserError
from spade_async.util.failpoints import failpoint
from spade_async.util.rng_data import (
    numpy_random_from_data,
    numpy_random_to_data,
    python_random_from_data,
    python_random_to_data,
    torch_state_to_text,
)
from spade_async.util.steps import ADAPTER_DIR, checkpoint_name

if TYPE_CHECKING:
    from spade_async.learner.base import Learner

FORMAT = "spade-async-checkpoint"
FORMAT_VERSION = 1
"""Bump when ``state.json``'s schema changes incompatibly (and keep a reader for the old one)."""
STATE_FILE = "state.json"
TENSORS_FILE = "tensors.safetensors"
LEGACY_STATE_FILE = "state.pt"
"""The pickled state of checkpoints written before the data format (read only)."""
VERSION_FILE = "adapter_version"
"""Text file holding the learner's adapter version at the checkpoint (read by adapter pruning)."""


class CheckpointError(UserError):
    """A checkpoint folder that cannot be read (missing, damaged, from a newer version)."""


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(Path(dirpath) / name, "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def rng_states() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


# -- tensors and plain data ----------------------------------------------------------------
# A "tree" is plain data and tensors: None, bool, int, float, str, torch.Tensor, and lists,
# tuples and dicts (str or int keys) of trees. In JSON a tensor is {"$tensor": key} (its data is
# in the safetensors file under that key), a tuple is {"$tuple": [...]}, and a dict whose keys are
# not all strings (an optimizer's per-parameter state) or that has a key starting with "$" is
# {"$items": [[key, value], ...]}. These three markers are the only types the loader builds
# beyond JSON's own.


class _Tensors:
    """The tensors of one checkpoint being written, by stable key."""

    def __init__(self) -> None:
        self.by_key: dict[str, torch.Tensor] = {}

    def add(self, key: str, tensor: torch.Tensor) -> dict[str, str]:
        base, n = key, 1
        while key in self.by_key:
            n += 1
            key = f"{base}#{n}"
        self.by_key[key] = tensor.detach().to("cpu").contiguous().clone()  # no shared storage (safetensors refuses it)
        return {"$tensor": key}


def tree_to_data(value: Any, tensors: _Tensors, path: str) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, torch.Tensor):
        return tensors.add(path, value)
    if isinstance(value, tuple):
        return {"$tuple": [tree_to_data(v, tensors, f"{path}/{i}") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [tree_to_data(v, tensors, f"{path}/{i}") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str | int) and not isinstance(k, bool) for k in value):
            raise TypeError(f"{path}: checkpoint dict keys must be str or int, got {list(value)[:3]!r}")
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: tree_to_data(v, tensors, f"{path}/{k}") for k, v in value.items()}
        return {"$items": [[k, tree_to_data(v, tensors, f"{path}/{k}")] for k, v in value.items()]}
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    raise TypeError(f"{path}: a {type(value).__name__} cannot be stored in a checkpoint (plain data and tensors only)")


def tree_from_data(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [tree_from_data(v, tensors) for v in data]
    if isinstance(data, dict):
        if len(data) == 1:
            ((marker, payload),) = data.items()
            if marker == "$tensor":
                if payload not in tensors:
                    raise CheckpointError(f"tensor {payload!r} is missing from {TENSORS_FILE}")
                return tensors[payload]
            if marker == "$tuple":
                return tuple(tree_from_data(v, tensors) for v in payload)
            if marker == "$items":
                return {k: tree_from_data(v, tensors) for k, v in payload}
        if any(k.startswith("$") for k in data):
            raise CheckpointError(f"unknown marker in checkpoint data: {sorted(data)[:3]!r}")
        return {k: tree_from_data(v, tensors) for k, v in data.items()}
    raise CheckpointError(f"not checkpoint data: {type(data).__name__}")


# -- the state: runtime form <-> file form -------------------------------------------------------
def _snapshot_to_data(snapshot: dict[str, Any], tensors: _Tensors) -> dict[str, Any]:
    from spade_async.selfplay.curriculum_data import curriculum_state_to_data

    out: dict[str, Any] = {}
    for key, value in snapshot.items():
        out[key] = (
            curriculum_state_to_data(value) if key == "curriculum" else tree_to_data(value, tensors, f"snapshot/{key}")
        )
    return out


def _snapshot_from_data(data: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    from spade_async.selfplay.curriculum_data import curriculum_state_from_data

    return {
        key: curriculum_state_from_data(value) if key == "curriculum" else tree_from_data(value, tensors)
        for key, value in data.items()
    }


def encode_state(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """A checkpoint's state in runtime form (as :func:`read_checkpoint` returns it) -> the JSON
    document and the tensors of the safetensors file."""
    tensors = _Tensors()
    rng = state["rng"]
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "step": int(state["step"]),
        "config_hash": str(state["config_hash"]),
        "rng": {
            "python": python_random_to_data(rng["python"]),
            "numpy": numpy_random_to_data(rng["numpy"]),
            "torch": tensors.add("rng/torch", rng["torch"]),
        },
        "snapshot": _snapshot_to_data(state["snapshot"], tensors),
        "learner": None if state["learner"] is None else tree_to_data(state["learner"], tensors, "learner"),
    }
    return document, tensors.by_key


def decode_state(document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Inverse of :func:`encode_state` (checks the format and its version)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointError(f"not a {FORMAT} file")
    version = document.get("version")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        raise CheckpointError(
            f"checkpoint format version {version!r} is not supported (this spade-async reads "
            f"version {FORMAT_VERSION}{'; it was written by a newer spade-async' if newer else ''})"
        )
    rng = document["rng"]
    torch_rng = tree_from_data(rng["torch"], tensors)
    if not isinstance(torch_rng, torch.Tensor):
        raise CheckpointError("rng.torch is not a tensor")
    return {
        "step": int(document["step"]),
        "config_hash": str(document["config_hash"]),
        "rng": {
            "python": python_random_from_data(rng["python"]),
            "numpy": numpy_random_from_data(rng["numpy"]),
            "torch": torch_rng,
        },
        "snapshot": _snapshot_from_data(document["snapshot"], tensors),
        "learner": None if document["learner"] is None else tree_from_data(document["learner"], tensors),
    }


def write_checkpoint(
    run_dir: Path, step: int, *, learner: Learner | None, snapshot: dict[str, Any], config_hash: str
) -> Path:
    """Write the checkpoint after internal step ``step`` (0-based) atomically as
    ``checkpoints/step_{step + 1}`` and return its path (blocking; run in a thread)."""
    from safetensors.torch import save_file

    root = RunDir(Path(run_dir)).checkpoints
    root.mkdir(parents=True, exist_ok=True)
    final = root / checkpoint_name(step)
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    state = {
        "step": step,
        "config_hash": config_hash,
        "snapshot": snapshot,
        "rng": rng_states(),
        "learner": learner.state_dict() if learner is not None else None,
    }
    document, tensors = encode_state(state)
    if learner is not None:
        learner.save_adapter(tmp / ADAPTER_DIR)
        (tmp / VERSION_FILE).write_text(f"{int(learner.version)}\n")
    save_file(tensors, str(tmp / TENSORS_FILE), metadata={"format": FORMAT, "version": str(FORMAT_VERSION)})
    (tmp / STATE_FILE).write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    _fsync_tree(tmp)
    failpoint("checkpoint_files")  # files written, not yet renamed or committed
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return final


def read_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint's state in runtime form: ``step``, ``config_hash``, ``snapshot``
    (curriculum objects rebuilt), ``rng`` and ``learner`` (tensors as torch tensors).

    Reads ``state.json`` + ``tensors.safetensors``; a folder from before the data format
    (``state.pt`` only) is read by :func:`_read_legacy`."""
    from safetensors.torch import load_file

    folder = Path(path)
    if (folder / STATE_FILE).is_file():
        try:
            document = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{folder / STATE_FILE}: {exc}") from None
        tensors = load_file(str(folder / TENSORS_FILE)) if (folder / TENSORS_FILE).is_file() else {}
        return decode_state(document, tensors)
    if (folder / LEGACY_STATE_FILE).is_file():
        return _read_legacy(folder / LEGACY_STATE_FILE)
    raise CheckpointError(f"{folder}: no {STATE_FILE} (nor a legacy {LEGACY_STATE_FILE})")


# -- legacy: pickled state.pt -------------------------------------------------------------------
def _legacy_globals() -> list[Any]:
    """Everything a pre-data-format ``state.pt`` may name, and nothing else: our checkpointed
    dataclasses under their module paths before the layout move (``spade_async.corpus``,
    ``spade_async.selfplay.designer``, ``spade_async.sandbox.validate``) and after it, and
    numpy's RNG-state array types. torch's own tensor and storage rebuilders and the builtins
    (``collections.OrderedDict``, ``_codecs.encode``) are in torch's weights-only allow-list."""
    from spade_async.admission.validate import Promise, ValidationResult
    from spade_async.engine.base import Completion
    from spade_async.memory.records import EnvRecord
    from spade_async.memory.retrieval import Example
    from spade_async.selfplay.curriculum import LiveEnv
    from spade_async.selfplay.design.corpus import Document
    from spade_async.selfplay.design.designer import Design, DesignJob

    moved = {  # class -> its module before the layout move
        Document: "spade_async.corpus",
        Design: "spade_async.selfplay.designer",
        DesignJob: "spade_async.selfplay.designer",
        ValidationResult: "spade_async.sandbox.validate",
        Promise: "spade_async.sandbox.validate",
    }
    allowed: list[Any] = [LiveEnv, Completion, EnvRecord, Example, *moved]
    allowed += [(cls, f"{module}.{cls.__qualname__}") for cls, module in moved.items()]
    try:  # numpy 2; numpy 1's pickles name numpy.core (aliased below)
        multiarray = importlib.import_module("numpy._core.multiarray")
    except ImportError:
        multiarray = importlib.import_module("numpy.core.multiarray")
    _reconstruct = multiarray._reconstruct
    allowed += [np.ndarray, np.dtype, _reconstruct, (_reconstruct, "numpy.core.multiarray._reconstruct")]
    allowed += [type(np.dtype(t)) for t in ("uint32", "float64", "int64")]  # numpy >= 1.25 pickles these classes
    return allowed


def _read_legacy(file: Path) -> dict[str, Any]:
    """A pickled ``state.pt`` through torch's weights-only unpickler, which builds only the
    allow-listed globals (:func:`_legacy_globals`); converted to the current form by a round
    trip through the data format (so what resumes is exactly what the next checkpoint stores)."""
    try:
        with torch.serialization.safe_globals(_legacy_globals()):
            state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # an UnpicklingError names the global it refused
        raise CheckpointError(f"{file}: cannot load this legacy checkpoint: {exc}") from None
    snapshot = state.get("snapshot", {})
    engine_rng = snapshot.get("engine_rng")
    if isinstance(engine_rng, torch.Tensor):  # the HF engine's generator state (engine.hf.HFEngine.rng_state)
        snapshot["engine_rng"] = {"generator": torch_state_to_text(engine_rng)}
    elif isinstance(engine_rng, tuple):  # a python Random's state (testing.ScriptedEngine.rng_state)
        snapshot["engine_rng"] = {"python": python_random_to_data(engine_rng)}
    document, tensors = encode_state(state)
    return decode_state(json.loads(json.dumps(document)), tensors)
