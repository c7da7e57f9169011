"""Where models run and in what dtype: the one place that turns `auto` into a device and a dtype.

Why one home: the HF engine, the learner and the launcher must agree (an adapter trained in
bfloat16 on CUDA is served by an engine that picked the same), so the rule lives here once.
"""

from __future__ import annotations

from typing import Any


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible (probed without initialising CUDA), else ``cpu``."""
    from spade_async.hardware.gpu import cuda_device_count

    if device == "auto":
        return "cuda" if cuda_device_count() > 0 else "cpu"
    return device


def resolve_dtype(dtype: str, device: str) -> Any:
    """``auto`` -> bfloat16 on CUDA, float32 elsewhere; else the named ``torch`` dtype."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, dtype)
