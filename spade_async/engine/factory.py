"""Build the configured engine for a placement: the one recipe for every place an engine runs.

Why its own module: the launcher builds the engine on this machine, and a remote engine
replica (:mod:`spade_async.cluster.engine_actor`) builds the same engine on its node; both
call :func:`build_engine`, so a replica is exactly the engine a one-box run would have.
"""

from __future__ import annotations

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.hardware.gpu import cuda_device_count
from spade_async.hardware.placement import Placement, resolve_placement


def build_engine(cfg: Config, model_path: str, placement: Placement | None = None) -> Engine:
    """The engine ``cfg.engine.backend`` names, on the placement's engine device(s)."""
    placement = placement if placement is not None else resolve_placement(cfg, cuda_device_count())
    if cfg.engine.backend == "vllm":
        from spade_async.engine.vllm import VLLMEngine

        return VLLMEngine(model_path, cfg, placement)
    from spade_async.engine.hf import HFEngine

    return HFEngine(
        model_path,
        device=placement.engine_device,
        dtype=cfg.model.dtype,
        batch_size=cfg.engine.batch_size,
        max_model_len=cfg.engine.max_model_len,
        seed=cfg.run.seed,
        prepack=cfg.engine.cpu_prepack,
        decode_attention=cfg.engine.cpu_decode_attention,
        lean_decode=cfg.engine.cpu_lean_decode,
        ragged_prefill=cfg.engine.cpu_ragged_prefill,
        merge_lora=cfg.engine.merge_lora,
    )
