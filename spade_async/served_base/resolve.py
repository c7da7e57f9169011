"""Which weights the engine loads: the base model, or the learner's dequantised NF4 base.

The dequantised base is built once per key and cached under
``~/.cache/spade-async/served-base/<key>``: the key names everything the weights depend on
(the model's files, the load dtype, the quantisation settings, the library versions that
quantise and dequantise), so a new model, setting or bitsandbytes release builds a new one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import time
from collections.abc import Callable
from pathlib import Path

from spade_async.config import Config
from spade_async.engine.embedded import build_cached, cache_root
from spade_async.hardware.device import dtype_name, resolve_dtype
from spade_async.learner.quantization import NF4_SETTINGS

FORMAT_VERSION = 1
"""Bumped when what the folder holds changes (a new key for every cached base)."""


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _files_fingerprint(model_path: str) -> list[list[object]]:
    """Name, size and mtime of each file of a local model folder (cheap; a re-download or a
    re-conversion changes them)."""
    folder = Path(model_path)
    return [
        [p.name, p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(folder.iterdir())
        if p.is_file() and p.suffix in {".safetensors", ".bin", ".json"}
    ]


def served_base_key(cfg: Config, model_path: str, device: str) -> str:
    """What the dequantised base of ``model_path`` depends on, hashed."""
    parts = {
        "model": [str(Path(model_path).resolve()), _files_fingerprint(model_path)],
        "dtype": dtype_name(cfg.model.dtype, device),
        "quantization": NF4_SETTINGS,
        "device": device.split(":")[0],  # a CUDA learner quantises on CUDA, a CPU one on the CPU
        "versions": [_version("bitsandbytes"), _version("transformers"), _version("torch")],
        "format": FORMAT_VERSION,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def engine_model_path(cfg: Config, model_path: str, learner_device: str, report: Callable[[str], None] = print) -> str:
    """The model folder the engine loads: ``model_path`` itself, unless the learner is QLoRA and
    ``model.qlora_serve = "dequantized"`` (the default), then the cached dequantised base
    (built on first use, quantised on ``learner_device`` as the learner quantises)."""
    if not cfg.model.qlora or cfg.model.qlora_serve == "base":
        return model_path
    target = cache_root() / "served-base" / served_base_key(cfg, model_path, learner_device)
    if not (target / ".complete").exists():
        report(f"dequantising the NF4 base once for the engine (model.qlora_serve) into {target} ...")
        t0 = time.perf_counter()
        dtype = resolve_dtype(cfg.model.dtype, learner_device)
        build_cached(target, lambda tmp: _write(model_path, dtype, learner_device, tmp))
        size = sum(p.stat().st_size for p in target.iterdir() if p.is_file())
        report(f"dequantised base ready in {time.perf_counter() - t0:.1f}s ({size / 2**20:.0f} MiB on disk)")
    return str(target)


def _write(model_path: str, dtype: object, device: str, tmp: Path) -> None:
    from spade_async.served_base.dequantize import write_dequantized_base

    write_dequantized_base(model_path, dtype, device, tmp)
