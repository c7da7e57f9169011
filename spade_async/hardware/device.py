"""Where models run and in what dtype: the one place that turns `auto` into a device and a dtype.

Why one home: the HF engine, the learner and the launcher must agree (an adapter trained in
bfloat16 is served by an engine that picked the same), so the rule lives here once:
``auto`` is bfloat16 on CUDA and on a CPU with bf16 instructions (``hardware.cpu``), float32
on any other CPU. The learner keeps its LoRA weights, optimizer state and log-softmax in
float32 whatever the base's dtype (learner/trainer.py says why).
"""

from __future__ import annotations

from typing import Any

from spade_async.hardware.cpu import BF16_FLAGS, bf16_flags


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible (probed without initialising CUDA), else ``cpu``."""
    from spade_async.hardware.gpu import cuda_device_count

    if device == "auto":
        return "cuda" if cuda_device_count() > 0 else "cpu"
    return device


def auto_dtype_name(device: str, flags: frozenset[str] | None = None) -> str:
    """What ``auto`` means on ``device``: ``bfloat16`` on CUDA or a CPU with ``BF16_FLAGS``, else
    ``float32`` (``flags`` defaults to this machine's CPU flags)."""
    if device.startswith("cuda") or bf16_flags(flags):
        return "bfloat16"
    return "float32"


def dtype_name(dtype: str, device: str) -> str:
    """The dtype a model configured with ``dtype`` gets on ``device``, as a name."""
    return auto_dtype_name(device) if dtype == "auto" else dtype


def resolve_dtype(dtype: str, device: str) -> Any:
    """The ``torch`` dtype for ``dtype`` on ``device`` (``auto`` by ``auto_dtype_name``)."""
    import torch

    return getattr(torch, dtype_name(dtype, device))


def describe_dtype(dtype: str, device: str) -> str:
    """One line for the start-up report: the dtype chosen and why, and how to override it."""
    chosen = dtype_name(dtype, device)
    if dtype != "auto":
        return f"dtype {chosen} (model.dtype)"
    if device.startswith("cuda"):
        return f"dtype {chosen} (auto on CUDA)"
    have = bf16_flags()
    if have:
        why = f"this CPU has {', '.join(have)}"
        other = "float32"
    else:
        why = f"this CPU has neither {' nor '.join(BF16_FLAGS)}"
        other = "bfloat16"
    return f"dtype {chosen} (auto: {why}; --set 'model.dtype=\"{other}\"' overrides)"
