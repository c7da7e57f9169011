"""Linear layers with their weights prepacked for oneDNN, for CPU decoding.

Why: at decode time every linear multiplies a handful of rows (one token per sequence) by a
large weight. ``torch.nn.functional.linear`` on a CPU hands oneDNN the plain row-major
weight and oneDNN reorders it into its blocked layout on every call, so a decode step reads
and writes every weight once more than it multiplies it. Reordering once, at load, and
calling oneDNN's linear on the packed copy removes that: measured on 2 cores (Intel Xeon with
AMX, one thread, 16 rows) 1.8-2.4x per bf16 linear with bit-identical results, 1.3-2.0x in
float32 (``benchmarks/engine.py`` measures the engine with and without it).

What stays as it was: the ``weight`` parameter (the engine's LoRA, engine/lora.py, wraps a
:class:`PackedLinear` like any ``nn.Linear`` and adds its delta to the packed result; merged,
`engine.merge_lora`, it replaces ``weight`` and packs it again with :func:`repack_linears`), and
gradients (packing is for inference: a module whose weight requires grad, or a tensor not
on the CPU, goes through the plain path). The packed copy costs one more copy of the weights
in memory (SmolLM2-135M: 270 MB in bf16; a tied ``lm_head`` gets its own).

Why sibling projections share one packed weight (:data:`SHARED_INPUT_SIBLINGS`): a decoder
layer multiplies the same hidden state by q, k and v, and its MLP input by gate and up. At a
decode step's 16 rows each call is mostly fixed cost (k and v, 576 -> 192, ran at ~115
GFLOP/s; 576 -> 960 at ~270), so one matmul over the stacked weights, whose output each
sibling returns a slice of, does the same work in fewer, fuller calls. The first sibling
called with a tensor computes the stacked product; the others called with that same tensor
read their slice of it; a sibling called with any other tensor computes it again, so a
model that feeds siblings different inputs stays correct (only slower).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

__all__ = ["SHARED_INPUT_SIBLINGS", "PackedLinear", "SiblingLinear", "can_pack", "pack_linears", "repack_linears"]

_PACKABLE = (torch.float32, torch.bfloat16)

SHARED_INPUT_SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
"""Names of sibling linears that a decoder layer (Llama, Qwen, Mistral and kin) feeds the same
input; packed as one weight when all of a group are present and packable alike."""


def can_pack() -> bool:
    """Whether this torch build has oneDNN (mkldnn) linear kernels to pack for."""
    return bool(torch.backends.mkldnn.is_available())


class PackedLinear(nn.Linear):
    """An ``nn.Linear`` that keeps a oneDNN-packed copy of its weight for inference."""

    packed: torch.Tensor
    rows_hint: int

    @classmethod
    def from_linear(cls, linear: nn.Linear, rows_hint: int) -> PackedLinear:
        out = cls.__new__(cls)
        nn.Module.__init__(out)
        out.in_features, out.out_features = linear.in_features, linear.out_features
        out.weight = linear.weight
        out.bias = linear.bias
        out.rows_hint = rows_hint
        with torch.no_grad():
            packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), rows_hint)
        out.register_buffer("packed", packed, persistent=False)
        return out

    def repack(self) -> None:
        """Pack ``weight`` again (after it was replaced, e.g. by a merged LoRA adapter)."""
        with torch.no_grad():
            self.packed = torch.ops.mkldnn._reorder_linear_weight(self.weight.detach(), self.rows_hint)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu" or x.dtype != self.packed.dtype or (torch.is_grad_enabled() and x.requires_grad):
            return nn.functional.linear(x, self.weight, self.bias)
        bias = None if self.bias is None else self.bias.detach()
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, bias, "none", [], "")


class _StackedProduct:
    """One packed matmul for sibling linears fed the same input; each reads its columns."""

    def __init__(self, linears: list[nn.Linear], rows_hint: int) -> None:
        self.rows_hint = rows_hint
        self.members: list[nn.Linear] = list(linears)
        """The layers whose weights are stacked, in column order (their :class:`SiblingLinear`s once packed)."""
        self.siblings = len(linears)
        self.repack()
        self._input: torch.Tensor | None = None
        self._output: torch.Tensor | None = None
        self._unread = 0

    def repack(self) -> None:
        """Stack and pack the members' current weights (after one was replaced, e.g. by a merged LoRA)."""
        with torch.no_grad():
            weight = torch.cat([linear.weight.detach() for linear in self.members])
            self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, self.rows_hint)
            biases = [linear.bias for linear in self.members]
            self.bias = None if all(b is None for b in biases) else torch.cat(_biases(self.members))
        self._input = self._output = None

    def columns(self, x: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """Columns ``[start, stop)`` of ``x`` times the stacked weights, computed once per input."""
        if self._input is not x or self._output is None:
            self._output = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
            self._input, self._unread = x, self.siblings
        out = self._output[..., start:stop]
        self._unread -= 1
        if self._unread <= 0:  # every sibling has read it: hold no activations between calls
            self._input = self._output = None
        return out


def _biases(linears: list[nn.Linear]) -> list[torch.Tensor]:
    return [
        linear.bias.detach() if linear.bias is not None else linear.weight.new_zeros(linear.out_features)
        for linear in linears
    ]


class SiblingLinear(nn.Linear):
    """An ``nn.Linear`` whose inference output is its slice of a :class:`_StackedProduct`."""

    @classmethod
    def from_linear(cls, linear: nn.Linear, product: _StackedProduct, start: int) -> SiblingLinear:
        out = cls.__new__(cls)
        nn.Module.__init__(out)
        out.in_features, out.out_features = linear.in_features, linear.out_features
        out.weight = linear.weight
        out.bias = linear.bias
        out._product, out._start = product, start
        return out

    _product: _StackedProduct
    _start: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self._product.packed
        if x.device.type != "cpu" or x.dtype != packed.dtype or (torch.is_grad_enabled() and x.requires_grad):
            return nn.functional.linear(x, self.weight, self.bias)
        return self._product.columns(x, self._start, self._start + self.out_features)


def pack_linears(model: nn.Module, rows_hint: int = 16) -> int:
    """Replace every CPU ``nn.Linear`` in ``model`` (float32 or bf16, frozen) by a
    :class:`PackedLinear` sharing its parameters, or, for a complete group of
    :data:`SHARED_INPUT_SIBLINGS`, by :class:`SiblingLinear` layers over one stacked packed
    weight; returns how many linears were packed either way.

    ``rows_hint`` is the number of rows oneDNN lays the weight out for (the decode batch)."""
    if not can_pack():
        return 0
    packed = 0
    for parent in list(model.modules()):
        linears = {
            name: child for name, child in parent.named_children() if type(child) is nn.Linear and _packable(child)
        }
        for group in SHARED_INPUT_SIBLINGS:
            members = [linears[name] for name in group if name in linears]
            if len(members) < len(group) or len({(m.in_features, m.weight.dtype) for m in members}) > 1:
                continue
            product = _StackedProduct(members, rows_hint)
            start = 0
            for index, (name, member) in enumerate(zip(group, members, strict=True)):
                sibling = SiblingLinear.from_linear(member, product, start)
                product.members[index] = sibling  # the module whose weight a later repack reads
                setattr(parent, name, sibling)
                start += member.out_features
                del linears[name]
            packed += len(group)
        for name, child in linears.items():
            setattr(parent, name, PackedLinear.from_linear(child, rows_hint))
            packed += 1
    return packed


def repack_linears(layers: Iterable[nn.Module]) -> int:
    """Pack again the weights of those of ``layers`` that decode from a packed copy (each
    stacked sibling product once), after their ``weight`` was replaced; returns how many
    packed weights were rebuilt. Other layers are skipped: they read ``weight`` directly."""
    products: dict[int, _StackedProduct] = {}
    rebuilt = 0
    for layer in layers:
        if isinstance(layer, PackedLinear):
            layer.repack()
            rebuilt += 1
        elif isinstance(layer, SiblingLinear):
            products.setdefault(id(layer._product), layer._product)
    for product in products.values():
        product.repack()
    return rebuilt + len(products)


def _packable(linear: nn.Linear) -> bool:
    w: Any = linear.weight
    return w.device.type == "cpu" and w.dtype in _PACKABLE and not w.requires_grad
