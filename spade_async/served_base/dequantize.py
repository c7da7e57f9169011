"""Write the NF4 base the learner computes with as a plain model in the serving dtype.

How: the model is loaded exactly as the learner loads it (``learner.quantization``: NF4,
double quantisation, the same load dtype and device), each ``bnb.nn.Linear4bit`` weight is
dequantised by bitsandbytes' own ``dequantize_4bit`` (its quant state, double-quantised
absmax included) to the dtype the learner's 4-bit matmul computes in, and those weights
replace the originals in a copy of the model loaded in that dtype; every other tensor
(embeddings, norms, lm_head) is the original. The folder is a normal HF model (config,
safetensors, tokenizer) that vLLM and the HF engine load like any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade_async.learner.quantization import nf4_config


def dequantized_linear_weights(model_path: str, load_dtype: Any, device: str) -> dict[str, Any]:
    """``{module name: weight}`` for every 4-bit linear layer of ``model_path`` quantised as the
    learner quantises it, dequantised to the learner's compute dtype, on the CPU."""
    import bitsandbytes as bnb
    import torch
    from transformers import AutoModelForCausalLM

    quantized = AutoModelForCausalLM.from_pretrained(
        model_path,
        local_files_only=True,
        dtype=load_dtype,
        quantization_config=nf4_config(load_dtype),
        device_map={"": device},
    )
    out: dict[str, Any] = {}
    with torch.no_grad():
        for name, module in quantized.named_modules():
            if isinstance(module, bnb.nn.Linear4bit):
                weight = bnb.functional.dequantize_4bit(module.weight.data, module.weight.quant_state)
                out[name] = weight.to(module.compute_dtype or load_dtype).cpu()
    del quantized
    return out


def write_dequantized_base(model_path: str, load_dtype: Any, device: str, out: Path) -> int:
    """Write the dequantised base of ``model_path`` into ``out``; returns how many linear
    layers it replaced (an error when none: a model with no 4-bit layer is not QLoRA)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    weights = dequantized_linear_weights(model_path, load_dtype, device)
    if not weights:
        raise ValueError(f"{model_path}: no layer was quantised to 4 bits, so there is nothing to dequantise")
    serve_dtype = next(iter(weights.values())).dtype
    model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True, dtype=serve_dtype)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, weight in weights.items():
            target = modules[name].weight
            if target.shape != weight.shape:
                raise ValueError(f"{name}: dequantised {tuple(weight.shape)} != original {tuple(target.shape)}")
            target.copy_(weight)
    model.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(model_path).save_pretrained(str(out))
    return len(weights)
