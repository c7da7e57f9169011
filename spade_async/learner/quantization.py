"""The learner's 4-bit quantisation settings, in one place.

Why one home: a QLoRA learner computes with the NF4-quantised base, and the engine must serve
exactly those weights (``spade_async.served_base`` dequantises them once); both must quantise
with the same settings, so they come from here.
"""

from __future__ import annotations

from typing import Any

NF4_SETTINGS: dict[str, Any] = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}
"""What ``BitsAndBytesConfig`` gets besides the compute dtype (QLoRA's recipe: NF4, double quantisation)."""


def nf4_config(dtype: Any) -> Any:
    """``BitsAndBytesConfig`` for a base loaded in ``dtype``: NF4 with double quantisation,
    computing in ``dtype`` (bfloat16 when ``dtype`` is float32: 4-bit matmuls in float32 are
    no more exact, only slower)."""
    import torch
    from transformers import BitsAndBytesConfig

    compute = dtype if dtype != torch.float32 else torch.bfloat16
    return BitsAndBytesConfig(**NF4_SETTINGS, bnb_4bit_compute_dtype=compute)
