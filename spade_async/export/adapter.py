"""Export a run's adapter: the PEFT folder as is, or merged into the base model.

Why merged: a PEFT adapter needs peft and the exact base weights it was trained on (here
often the embedded model converted into a local cache); merged weights plus the tokenizer
load with ``AutoModelForCausalLM.from_pretrained`` alone, anywhere. The merge runs in
float32 on CPU (the trainer's LoRA weights are float32) and is saved in the base model's
dtype unless ``dtype`` says otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from spade_async.eval.models import ADAPTER_FILE, ModelSpecError, step_adapter
from spade_async.export.atomic import ExportError, check_out, folder_written_whole
from spade_async.util.safetensors_check import safetensors_problem
from spade_async.util.steps import shown

MANIFEST = "spade_export.json"


def check_adapter(adapter: Path) -> None:
    """Refuse an adapter folder whose files are not whole: every safetensors file's header and
    size, and the adapter config's JSON (a half-written checkpoint is not exported)."""
    for file in sorted(adapter.glob("*.safetensors")):
        problem = safetensors_problem(file)
        if problem is not None:
            raise ExportError(f"{problem}; export another step (--step N)")
    config = adapter / "adapter_config.json"
    if config.is_file():
        try:
            json.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ExportError(f"{config} cannot be read ({exc}); export another step (--step N)") from None


def find_adapter(run_dir: Path, step: str = "last") -> tuple[Path, int]:
    """The adapter folder of the checkpoint after step N (``last``: the newest) and N, counted
    from 1 as the console counts (``run_dir/checkpoints/step_N``; see spade_async.util.steps)."""
    try:
        spec = step_adapter(run_dir, step)
    except ModelSpecError as exc:
        raise ExportError(str(exc)) from None
    assert spec.adapter is not None and spec.step is not None
    return Path(spec.adapter), shown(spec.step)


def export_adapter(
    run_dir: Path,
    out: Path,
    *,
    step: str = "last",
    merge: bool = False,
    force: bool = False,
    model_path: str | None = None,
) -> dict[str, Any]:
    """Write the adapter (or the merged model) to ``out``; returns the manifest written beside it.

    ``model_path``: the base model folder; default: resolved from the run's config.
    """
    from spade_async.run.assemble import load_run_config

    check_out(out, run_dir, force=force, marker=MANIFEST)
    adapter, n = find_adapter(run_dir, step)
    check_adapter(adapter)
    cfg = load_run_config(run_dir)
    with folder_written_whole(out) as tmp:
        manifest = _write(run_dir, adapter, n, tmp, cfg.model.name, merge, model_path)
    return manifest


def _write(
    run_dir: Path, adapter: Path, n: int, out: Path, base_model: str, merge: bool, model_path: str | None
) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "run_dir": str(run_dir.resolve()),
        "step": n,
        "base_model": base_model,
        "merged": merge,
        "source_adapter": str(adapter),
    }
    if not merge:
        for item in adapter.iterdir():
            if item.is_file():
                shutil.copy2(item, out / item.name)
        check_adapter(out)  # the copy is whole too
    else:
        if model_path is None:
            from spade_async.engine.embedded import resolve_model_path

            model_path = resolve_model_path(base_model)
        merge_adapter(Path(model_path), adapter, out)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def merge_adapter(model_path: Path, adapter: Path, out: Path) -> None:
    """Base + LoRA -> plain weights and tokenizer in ``out`` (loadable by transformers alone)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (adapter / ADAPTER_FILE).is_file():
        raise ExportError(f"{adapter}: no PEFT adapter here")
    base = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32)
    saved_dtype = getattr(base.config, "torch_dtype", None) or getattr(base.config, "dtype", None)
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    if isinstance(saved_dtype, torch.dtype) and saved_dtype != torch.float32:
        merged = merged.to(saved_dtype)
    merged.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(model_path)).save_pretrained(str(out))
