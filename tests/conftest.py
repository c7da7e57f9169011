"""Shared fixtures: the anyio backend, and a tiny randomly initialised model with the real tokenizer."""

from __future__ import annotations

import os

import pytest

from spade_async.hardware import cpu as _cpu
from tests import hostguard

# Before any test asks torch about CUDA: count GPUs through NVML so that no later fork (vLLM's
# engine process) inherits an initialised CUDA context.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


@pytest.fixture(scope="module", autouse=True)
def _host_left_as_found(request: pytest.FixtureRequest):
    """Every test module leaves other processes' priorities/affinities and host files as it
    found them (tests/hostguard.py says what is watched and why)."""
    before = hostguard.snapshot()
    yield
    changes = hostguard.compare(before, hostguard.snapshot())
    if changes:
        pytest.fail(
            f"{request.module.__name__} changed the host (tests may act only on what they created): "
            + "; ".join(changes[:20])
            + (f" (+{len(changes) - 20} more)" if len(changes) > 20 else ""),
            pytrace=False,
        )


# `model.dtype = "auto"` means float32 in every in-process test unless it is marked
# `machine_dtype`: `auto` is bfloat16 on a CPU with bf16 instructions (hardware/cpu.py), and the
# exact float32 assertions (engine logprobs = a forward pass to 1e-4, ...) must hold on every
# machine CI may draw. Pinned here, at import, so module- and session-scoped fixtures (an engine
# built once per module) see it too. The bf16 path has its own tests (dtype pinned), the tests
# marked `machine_dtype` (the embedded model end to end) run with this machine's choice, and
# subprocess runs keep the machine's choice unless they pin `model.dtype`.
_MACHINE_CPU_FLAGS = _cpu.cpu_flags
_cpu.cpu_flags = frozenset  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _machine_dtype_when_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("machine_dtype") is not None:
        monkeypatch.setattr(_cpu, "cpu_flags", _MACHINE_CPU_FLAGS)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def tiny_model_dir():
    """Folder of a tiny random Llama with the SmolLM2 tokenizer (built once, cached)."""
    from spade_async.testing.tiny import build_tiny_model

    return build_tiny_model()


@pytest.fixture(scope="session")
def embedded_model_dir():
    """Folder of the converted embedded SmolLM2-135M-Instruct (first call converts, ~45 s)."""
    from spade_async.engine.embedded import model_dir

    return model_dir()
