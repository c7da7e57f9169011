"""Linear layers with their weights prepacked for oneDNN, for CPU decoding.

Why: at decode time every linear multiplies a handful of rows (one token per sequence) by a
large weight. ``torch.nn.functional.linear`` on a CPU hands oneDNN the plain row-major
weight and oneDNN reorders it into its blocked layout on every call, so a decode step reads
and writes every weight once more than it multiplies it. Reordering once, at load, and
calling oneDNN's linear on the packed copy removes that: measured on 2 cores (Intel Xeon with
AMX, one thread, 16 rows) 1.8-2.4x per bf16 linear with bit-identical results, 1.3-2.0x in
float32 (``benchmarks/engine.py`` measures the engine with and without it).

What stays as it was: the ``weight`` parameter (the engine's LoRA, engine/lora.py, wraps a
:class:`PackedLinear` like any ``nn.Linear`` and adds its delta to the packed result), and
gradients (packing is for inference: a module whose weight requires grad, or a tensor not
on the CPU, goes through the plain path). The packed copy costs one more copy of the weights
in memory (SmolLM2-135M: 270 MB in bf16; a tied ``lm_head`` gets its own).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["PackedLinear", "can_pack", "pack_linears"]

_PACKABLE = (torch.float32, torch.bfloat16)


def can_pack() -> bool:
    """Whether this torch build has oneDNN (mkldnn) linear kernels to pack for."""
    return bool(torch.backends.mkldnn.is_available())


class PackedLinear(nn.Linear):
    """An ``nn.Linear`` that keeps a oneDNN-packed copy of its weight for inference."""

    packed: torch.Tensor

    @classmethod
    def from_linear(cls, linear: nn.Linear, rows_hint: int) -> PackedLinear:
        out = cls.__new__(cls)
        nn.Module.__init__(out)
        out.in_features, out.out_features = linear.in_features, linear.out_features
        out.weight = linear.weight
        out.bias = linear.bias
        with torch.no_grad():
            packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), rows_hint)
        out.register_buffer("packed", packed, persistent=False)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu" or x.dtype != self.packed.dtype or (torch.is_grad_enabled() and x.requires_grad):
            return nn.functional.linear(x, self.weight, self.bias)
        bias = None if self.bias is None else self.bias.detach()
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, bias, "none", [], "")


def pack_linears(model: nn.Module, rows_hint: int = 16) -> int:
    """Replace every CPU ``nn.Linear`` in ``model`` (float32 or bf16, frozen) by a
    :class:`PackedLinear` sharing its parameters; returns how many were packed.

    ``rows_hint`` is the number of rows oneDNN lays the weight out for (the decode batch)."""
    if not can_pack():
        return 0
    targets: list[tuple[nn.Module, str, nn.Linear]] = []
    for parent in model.modules():
        for name, child in parent.named_children():
            if type(child) is nn.Linear and _packable(child):
                targets.append((parent, name, child))
    for parent, name, child in targets:
        setattr(parent, name, PackedLinear.from_linear(child, rows_hint))
    return len(targets)


def _packable(linear: nn.Linear) -> bool:
    w: Any = linear.weight
    return w.device.type == "cpu" and w.dtype in _PACKABLE and not w.requires_grad
