"""RNG states as plain data (JSON types), for checkpoints that hold no pickles.

Each pair converts one kind of state to lists, numbers and strings and back, exactly:
``random.Random.getstate()``, ``numpy.random.get_state()`` (the legacy MT19937 global), and
a torch generator's state (a uint8 tensor: base64 text here; the checkpoint itself stores
the global torch states as tensors in its safetensors file).
"""

from __future__ import annotations

import base64
from typing import Any


def python_random_to_data(state: tuple[Any, ...]) -> list[Any]:
    """``random.getstate()`` -> ``[version, [ints...], gauss_next]``."""
    version, internal, gauss_next = state
    return [int(version), [int(x) for x in internal], None if gauss_next is None else float(gauss_next)]


def python_random_from_data(data: Any) -> tuple[Any, ...]:
    """Inverse of :func:`python_random_to_data`: a state ``random.setstate`` accepts."""
    version, internal, gauss_next = data
    return (int(version), tuple(int(x) for x in internal), None if gauss_next is None else float(gauss_next))


def numpy_random_to_data(state: tuple[Any, ...]) -> dict[str, Any]:
    """``numpy.random.get_state()`` (legacy tuple form) -> a dict of plain values."""
    name, key, pos, has_gauss, cached_gaussian = state
    return {
        "bit_generator": str(name),
        "key": [int(x) for x in key],
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached_gaussian),
    }


def numpy_random_from_data(data: dict[str, Any]) -> tuple[Any, ...]:
    """Inverse of :func:`numpy_random_to_data`: a state ``numpy.random.set_state`` accepts."""
    import numpy as np

    return (
        str(data["bit_generator"]),
        np.asarray(data["key"], dtype=np.uint32),
        int(data["pos"]),
        int(data["has_gauss"]),
        float(data["cached_gaussian"]),
    )


def torch_state_to_text(state: Any) -> str:
    """A torch RNG state (uint8 CPU tensor) as base64 text."""
    return base64.b64encode(state.detach().cpu().contiguous().numpy().tobytes()).decode("ascii")


def torch_state_from_text(text: str) -> Any:
    """Inverse of :func:`torch_state_to_text`: a uint8 tensor ``Generator.set_state`` accepts."""
    import torch

    return torch.frombuffer(bytearray(base64.b64decode(text.encode("ascii"), validate=True)), dtype=torch.uint8).clone()
