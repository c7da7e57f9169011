"""The HF engine's LoRA: a low-rank delta beside each frozen linear (float32 at a few rows).

Why not PEFT's layers at decode time: PEFT's LoRA forward (the input upcast to the adapter's
float32, a dropout call, two linears, a scale, an add and a cast back, per layer per token)
made a bf16 decode step of SmolLM2-135M with rank-8 adapters on its 7 projections 1.5x the
base model's (39.7 -> 59.3 ms at batch 4, 79 -> 117 ms at batch 16, 2 cores). Here each
adapted layer is the base linear plus two small float32 matmuls added into its output, ``B``
scaled once at load. Why float32 for a decode step's few rows even in a bf16 model: at those
shapes (rank 8) a CPU bf16 matmul costs ~16 us of fixed overhead against ~5 us in float32
(the same 2 cores). Why the layer's own dtype from :data:`FLOAT32_DELTA_ROWS` rows on (a
prefill, an agent turn's new observation): there the float32 copy of the input and the
mixed-dtype add cost more than the matmuls; a 3,968-row gate projection's delta took 5.8 ms
in float32 and 0.95 ms as one bf16 ``addmm_`` (the learner also multiplies its LoRA in bf16
under autocast). ``docs/cpu_speed.md`` has the measured effect.

The learner still writes adapters with PEFT; this reads PEFT's files
(``adapter_config.json`` and ``adapter_model.safetensors``) and refuses, by name, any PEFT
feature it does not apply (DoRA, biases, per-module rank or alpha patterns, extra saved
modules), so an adapter is never served half-applied.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from spade_async.util.errors import UserError

__all__ = ["FLOAT32_DELTA_ROWS", "AdapterFormatError", "LoRALinear", "LoRAWeights", "apply_lora", "read_lora"]

FLOAT32_DELTA_ROWS = 16
"""Rows (tokens) from which a delta is computed in the layer's own dtype instead of float32.
Measured on 2 cores (AMD EPYC, bf16, rank 8, 576 -> 1536): 4 rows float32 19 us / bf16 41 us;
16 rows 72 / 59; 256 rows 781 / 135."""

_PREFIX = "base_model.model."
"""PEFT's prefix on every saved key; what follows is the module's path in the base model."""

_UNSUPPORTED: dict[str, object] = {
    "use_dora": False,
    "bias": "none",
    "lora_bias": False,
    "fan_in_fan_out": False,
    "modules_to_save": None,
    "layer_replication": None,
    "rank_pattern": {},
    "alpha_pattern": {},
    "target_parameters": None,
    "trainable_token_indices": None,
}
"""adapter_config.json settings this engine applies only at these values (absent counts as these)."""


class AdapterFormatError(UserError, ValueError):
    """An adapter folder this engine cannot serve exactly."""


@dataclass(frozen=True)
class LoRAWeights:
    """One adapter: per module path, ``down`` (rank x in) and ``up`` (out x rank, scaled), float32."""

    deltas: dict[str, tuple[torch.Tensor, torch.Tensor]]


def read_lora(path: str | Path) -> LoRAWeights:
    """Read a PEFT LoRA adapter folder; ``up`` carries the adapter's scale (alpha / r, or
    alpha / sqrt(r) with rsLoRA)."""
    from safetensors.torch import load_file

    folder = Path(path)
    config_file = folder / "adapter_config.json"
    weights_file = folder / "adapter_model.safetensors"
    for f in (config_file, weights_file):
        if not f.is_file():
            raise AdapterFormatError(f"adapter {folder}: {f.name} is missing")
    config = json.loads(config_file.read_text())
    if config.get("peft_type") != "LORA":
        raise AdapterFormatError(f"adapter {folder}: peft_type {config.get('peft_type')!r}, the HF engine serves LORA")
    for key, plain in _UNSUPPORTED.items():
        value = config.get(key, plain)
        if value != plain and not (plain in ({}, None) and not value):
            raise AdapterFormatError(
                f"adapter {folder}: {key} = {value!r} is not applied by the HF engine (it serves plain LoRA)"
            )
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
    tensors = load_file(str(weights_file))
    deltas: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for key in tensors:
        if not key.endswith(".lora_A.weight"):
            if not key.endswith(".lora_B.weight"):
                raise AdapterFormatError(f"adapter {folder}: tensor {key} is not a LoRA A/B weight")
            continue
        module = key.removesuffix(".lora_A.weight").removeprefix(_PREFIX)
        up_key = key.removesuffix("lora_A.weight") + "lora_B.weight"
        if up_key not in tensors:
            raise AdapterFormatError(f"adapter {folder}: {key} has no {up_key}")
        deltas[module] = (tensors[key].float(), tensors[up_key].float() * scale)
    if not deltas:
        raise AdapterFormatError(f"adapter {folder}: no LoRA weights in {weights_file.name}")
    return LoRAWeights(deltas)


class LoRALinear(nn.Module):
    """A frozen linear layer plus an optional low-rank delta: ``base(x) + (x A^T) B^T``."""

    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base = base
        self.down: torch.Tensor | None = None
        self.up: torch.Tensor | None = None
        self._down_native: torch.Tensor | None = None
        self._up_native_t: torch.Tensor | None = None

    def set_delta(self, down: torch.Tensor | None, up: torch.Tensor | None, dtype: torch.dtype | None = None) -> None:
        """Serve ``down`` (rank x in) and ``up`` (out x rank, scaled) in float32, with copies in
        ``dtype`` (the base weight's) for many-row inputs; None clears the delta."""
        self.down, self.up = down, up
        if down is None or up is None:
            self._down_native = self._up_native_t = None
            return
        native = dtype or down.dtype
        self._down_native = down.to(native)
        self._up_native_t = up.to(native).t()  # addmm_ wants (rank x out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        if self.down is None or self.up is None or self._down_native is None or self._up_native_t is None:
            return y
        if x.numel() < FLOAT32_DELTA_ROWS * x.shape[-1]:
            delta = nn.functional.linear(nn.functional.linear(x.float(), self.down), self.up)
            return y.add_(delta) if torch.is_inference_mode_enabled() else y + delta.to(y.dtype)
        hidden = nn.functional.linear(x.to(self._down_native.dtype), self._down_native)
        if torch.is_inference_mode_enabled() and y.is_contiguous() and y.dtype == hidden.dtype:
            y.view(-1, y.shape[-1]).addmm_(hidden.reshape(-1, hidden.shape[-1]), self._up_native_t)
            return y
        return y + (hidden @ self._up_native_t).to(y.dtype)


def apply_lora(model: nn.Module, weights: LoRAWeights | None) -> int:
    """Serve ``weights`` on ``model`` (None: the base model); returns how many layers carry a delta.

    The first adapter wraps its target linears in :class:`LoRALinear` (they stay wrapped);
    a later one replaces every delta, and clears those of layers it does not target.
    """
    wrapped = {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}
    for m in wrapped.values():
        m.set_delta(None, None)
    if weights is None:
        return 0
    for name, (down, up) in weights.deltas.items():
        layer = wrapped.get(name)
        if layer is None:
            layer = _wrap(model, name)
            wrapped[name] = layer
        weight: torch.Tensor = layer.base.weight  # type: ignore[assignment]
        in_features, out_features = weight.shape[1], weight.shape[0]
        if down.shape[1] != in_features or up.shape[0] != out_features or down.shape[0] != up.shape[1]:
            raise AdapterFormatError(
                f"adapter layer {name}: A {tuple(down.shape)} / B {tuple(up.shape)} do not fit a "
                f"{in_features} -> {out_features} linear (an adapter for another model?)"
            )
        layer.set_delta(down.to(weight.device).contiguous(), up.to(weight.device).contiguous(), weight.dtype)
    return len(weights.deltas)


def _wrap(model: nn.Module, name: str) -> LoRALinear:
    parent_name, _, child_name = name.rpartition(".")
    try:
        parent = model.get_submodule(parent_name) if parent_name else model
        child = parent.get_submodule(child_name)
    except AttributeError as err:
        raise AdapterFormatError(
            f"adapter layer {name}: the model has no such module (an adapter for another model?)"
        ) from err
    if not isinstance(child, nn.Linear):
        raise AdapterFormatError(f"adapter layer {name}: a {type(child).__name__}; the HF engine adapts linear layers")
    layer = LoRALinear(child)
    setattr(parent, child_name, layer)
    return layer
