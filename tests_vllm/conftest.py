"""Contract tests against the real ``vllm`` package, on a machine without a GPU.

Run by ``make check-vllm`` only (its own venv: vLLM pins its own torch); this folder is
outside ``testpaths``, so the default suite never collects it.

The one stand-in is vLLM's *platform* (the object that answers hardware questions): vLLM's
CUDA platform module loads ``libcuda.so.1`` at import, which a machine without an NVIDIA
driver does not have, and without it vLLM resolves an "unspecified" platform with no device
type. :class:`GPUlessCuda` answers as a CUDA box would (device type ``cuda``, an H200's
compute capability 9.0 and memory, 8 devices, no pinned host memory) and names a pure-torch
attention backend for building layers; everything else -- argument parsing, every config's validation, the Qwen3
model class, the LoRA loader, the request validation -- is vLLM's own code.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PRESET_SHAPES = {"Qwen/Qwen3-4B": "qwen3-4b", "Qwen/Qwen3-8B": "qwen3-8b",
                 "embedded:smollm2-135m-instruct": "smollm2-135m"}  # fmt: skip
"""Model of each shipped GPU preset -> the local config-only folder standing in for it."""


def _install_gpuless_platform() -> None:
    import vllm.platforms as platforms
    from vllm.platforms.interface import DeviceCapability, Platform, PlatformEnum

    class GPUlessCuda(Platform):
        _enum = PlatformEnum.OOT
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"
        ray_device_key = "GPU"
        dist_backend = "nccl"
        device_control_env_var = "CUDA_VISIBLE_DEVICES"

        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(major=9, minor=0)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return "NVIDIA H200 (stand-in)"

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return 141 * 2**30

        @classmethod
        def device_count(cls) -> int:
            return 8

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return False  # pinning host memory needs the CUDA driver

        @classmethod
        def get_attn_backend_cls(
            cls, selected_backend: Any, attn_selector_config: Any, num_heads: int | None = None
        ) -> str:
            return "vllm.v1.attention.backends.flex_attention.FlexAttentionBackend"

    platforms.current_platform = GPUlessCuda()


_install_gpuless_platform()


def pytest_report_header(config: pytest.Config) -> list[str]:
    import torch
    import transformers
    import vllm

    return [
        f"vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__} "
        "(platform: GPU-less CUDA stand-in)"
    ]


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Config-only model folders (config, generation config, tokenizer; no weights) with the
    shape of each preset's model; vLLM's engine config reads nothing else."""
    from spade_async.testing.synthetic import write_config_only

    root = tmp_path_factory.mktemp("models")
    return {name: str(write_config_only(root / shape, shape)) for name, shape in PRESET_SHAPES.items()}


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random-weight Qwen3 with tiny shapes (real architecture and projection names)."""
    from spade_async.testing.synthetic import build_qwen3

    return str(build_qwen3(tmp_path_factory.mktemp("tiny") / "qwen3-tiny", "qwen3-tiny", dtype="float32"))


@pytest.fixture(scope="session")
def model_parallel() -> None:
    """vLLM's (single-rank, gloo) process groups, needed to build its model layers."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with set_current_vllm_config(VllmConfig()):
        init_distributed_environment(
            world_size=1, rank=0, local_rank=0, backend="gloo", distributed_init_method=f"tcp://127.0.0.1:{port}"
        )
        initialize_model_parallel(1, 1)
