"""The HF engine's LoRA: merged into the frozen weights at load, or a low-rank delta beside each
frozen linear (float32 at a few rows).

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

Why a merged option (`engine.merge_lora`, ``apply_lora(merge=True)``, off): even as two small
matmuls, the deltas of 210 layers still cost 23-35% of a bf16 decode step at batch 11-16.
Merged at load, each target's weight becomes ``W + B A``, computed in float32 and rounded
once to ``W``'s dtype, and a step costs exactly the base model's (bf16 decode 1.14-1.21x the
unmerged adapter's tokens/s at batch 11, 1.32-1.40x at 16). The model keeps every base
weight it replaced (one more copy of the adapted weights: ~200 MiB for SmolLM2-135M in
bf16), so each load merges from the base, never on top of an earlier merge, and the base
model comes back bit for bit; a layer's oneDNN-packed copy (engine/packed.py) is rebuilt
from its new weight. The price is numerical: the delta is rounded into ``W``'s bf16 grid
instead of added to the output. On trained adapters the adapter probe's engine-learner gap
stayed within 0.011-0.028 nats (unmerged 0.003-0.036; bound 0.15). Why off: bf16 cannot hold one
RL step's change of ``B A`` (between two consecutive adapters of a run 80.6% of the merged
weights did not change), so a run's engine would sample from a policy that lags the learner's
(docs/cpu_speed.md, item 17). For serving a fixed adapter only.

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

from spade_async.engine.packed import repack_linears
from spade_async.util.errors import UserError

__all__ = [
    "DESIGNER_ROLES",
    "DESIGNER_SUBFOLDER",
    "FLOAT32_DELTA_ROWS",
    "AdapterFormatError",
    "LoRALinear",
    "LoRAWeights",
    "apply_lora",
    "read_lora",
]

DESIGNER_SUBFOLDER = "designer"
"""Subfolder of an adapter folder with the designer's own LoRA weights (``learner.adapters =
"per_role"``); without it both roles are served the folder's one adapter."""

DESIGNER_ROLES = frozenset({"designer", "hint"})
"""Request roles served the designer's weights when an adapter has them: its environments and
their hints. Every other role (the agent, the probe) gets the folder's own adapter."""

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


def apply_lora(model: nn.Module, weights: LoRAWeights | None, *, merge: bool = False) -> int:
    """Serve ``weights`` on ``model`` (None: the base model); returns how many layers carry a delta.

    Unmerged (the default): the first adapter wraps its target linears in :class:`LoRALinear`
    (they stay wrapped); a later one replaces every delta, and clears those of layers it does
    not target. Merged (``merge``, `engine.merge_lora`): each target linear's ``weight`` becomes
    ``W + B A`` (computed in float32, rounded once to ``W``'s dtype) and its packed copy, if it
    has one, is rebuilt; the model keeps each replaced base weight, so every load merges from
    the base (never on top of an earlier merge) and None puts the base weights themselves back.
    """
    targets = _targets(model, weights) if weights is not None else {}  # every check before any change
    touched = {id(layer): layer for layer in _restore_base(model)}
    wrapped = {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}
    for m in wrapped.values():
        m.set_delta(None, None)
    if weights is None or merge:
        if weights is not None:
            for name, (down, up) in weights.deltas.items():
                _merge(model, name, targets[name], down, up)
                touched[id(targets[name])] = targets[name]
        repack_linears(touched.values())
        return 0 if weights is None else len(weights.deltas)
    repack_linears(touched.values())
    for name, (down, up) in weights.deltas.items():
        layer = wrapped[name] if name in wrapped else _wrap(model, name)
        wrapped[name] = layer
        weight: torch.Tensor = layer.base.weight  # type: ignore[assignment]
        layer.set_delta(down.to(weight.device).contiguous(), up.to(weight.device).contiguous(), weight.dtype)
    return len(weights.deltas)


_BASE_WEIGHTS = "_lora_base_weights"
"""Attribute of a model serving a merged adapter: module path -> that linear's own (base) weight."""


def _merge(model: nn.Module, name: str, layer: nn.Linear, down: torch.Tensor, up: torch.Tensor) -> None:
    """Replace ``layer.weight`` by ``W + up @ down`` (float32, rounded once), keeping ``W`` aside."""
    base: dict[str, torch.Tensor] = model.__dict__.setdefault(_BASE_WEIGHTS, {})
    weight = base.setdefault(name, layer.weight)  # the base weight: restored before any merge
    with torch.no_grad():
        w = weight.detach()
        merged = torch.addmm(w.float(), up.to(w.device), down.to(w.device)).to(w.dtype)
    layer.weight = nn.Parameter(merged, requires_grad=False)


def _restore_base(model: nn.Module) -> list[nn.Linear]:
    """Put back every base weight a merged adapter replaced; returns the layers restored."""
    base: dict[str, torch.Tensor] = model.__dict__.pop(_BASE_WEIGHTS, {})
    restored = []
    for name, weight in base.items():
        layer = _linear(model.get_submodule(name))
        layer.weight = weight
        restored.append(layer)
    return restored


def _linear(module: nn.Module) -> nn.Linear:
    """The linear a module path holds: itself, or the base of the :class:`LoRALinear` wrapping it."""
    return module.base if isinstance(module, LoRALinear) else module  # type: ignore[return-value]


def _targets(model: nn.Module, weights: LoRAWeights) -> dict[str, nn.Linear]:
    """Each adapted module path's linear, the factors checked against its shape."""
    targets = {}
    for name, (down, up) in weights.deltas.items():
        _, _, child = _locate(model, name)
        layer = _linear(child)
        if not isinstance(layer, nn.Linear):
            raise AdapterFormatError(
                f"adapter layer {name}: a {type(layer).__name__}; the HF engine adapts linear layers"
            )
        weight = layer.weight
        in_features, out_features = weight.shape[1], weight.shape[0]
        if down.shape[1] != in_features or up.shape[0] != out_features or down.shape[0] != up.shape[1]:
            raise AdapterFormatError(
                f"adapter layer {name}: A {tuple(down.shape)} / B {tuple(up.shape)} do not fit a "
                f"{in_features} -> {out_features} linear (an adapter for another model?)"
            )
        targets[name] = layer
    return targets


def _locate(model: nn.Module, name: str) -> tuple[nn.Module, str, nn.Module]:
    parent_name, _, child_name = name.rpartition(".")
    try:
        parent = model.get_submodule(parent_name) if parent_name else model
        return parent, child_name, parent.get_submodule(child_name)
    except AttributeError as err:
        raise AdapterFormatError(
            f"adapter layer {name}: the model has no such module (an adapter for another model?)"
        ) from err


def _wrap(model: nn.Module, name: str) -> LoRALinear:
    parent, child_name, child = _locate(model, name)
    layer = LoRALinear(child)
    setattr(parent, child_name, layer)
    return layer
