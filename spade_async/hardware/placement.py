"""Which GPUs generate and which train: a pure function of the config and the GPU count.

Why pure: placement decides whether a run works at all on a many-GPU box, and no CI machine
has GPUs. Keeping the decision free of CUDA (the caller passes ``gpu_count``, probed without
initialising CUDA by :func:`spade_async.hardware.gpu.cuda_device_count`) lets every layout be tested
on CPU with a made-up count.

The rules (the README's GPU section says the same in prose):

- no GPU (or ``run.device = "cpu"``): everything on the CPU;
- one GPU: the engine and the learner share it; vLLM takes ``engine.gpu_memory_utilization``;
- two or more: the learner owns ``placement.learner_gpu`` (default: the first one), the
  engine owns the rest at ``placement.dedicated_memory_utilization``. vLLM splits its GPUs
  into ``tensor_parallel_size``-wide replicas, data parallel across them; the HF engine
  uses one GPU.

GPU numbers are the CUDA numbers this process sees (after any ``CUDA_VISIBLE_DEVICES`` the
user set); :func:`spade_async.hardware.gpu.visible_devices_value` maps them back to what the engine's
``CUDA_VISIBLE_DEVICES`` must say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spade_async.util.errors import UserError


class PlacementError(UserError):
    """A placement this machine cannot honour; the message names the fix."""


@dataclass(frozen=True)
class Placement:
    """The resolved layout of one run."""

    gpu_count: int
    """GPUs visible to this process when the run started."""
    engine_gpus: tuple[int, ...]
    """GPUs the generation engine owns (empty on CPU)."""
    learner_gpu: int | None
    """GPU the learner trains on (None on CPU)."""
    tensor_parallel_size: int = 1
    """vLLM: GPUs per engine replica."""
    data_parallel_size: int = 1
    """vLLM: engine replicas."""
    gpu_memory_utilization: float = 0.45
    """vLLM's share of each engine GPU."""
    backend: str = "hf"
    """Engine backend the placement was resolved for."""

    @property
    def on_gpu(self) -> bool:
        return self.learner_gpu is not None

    @property
    def colocated(self) -> bool:
        """Engine and learner share a GPU."""
        return self.learner_gpu is not None and self.learner_gpu in self.engine_gpus

    @property
    def learner_device(self) -> str:
        return "cpu" if self.learner_gpu is None else f"cuda:{self.learner_gpu}"

    @property
    def engine_device(self) -> str:
        """Torch device of the HF engine (vLLM places itself through CUDA_VISIBLE_DEVICES)."""
        return "cpu" if not self.engine_gpus else f"cuda:{self.engine_gpus[0]}"

    def describe(self) -> list[str]:
        """Human-readable lines for ``config show`` and the run's start-up report."""
        if not self.on_gpu:
            return ["engine and learner on the CPU (no GPU in use)"]
        gpus = ", ".join(map(str, self.engine_gpus))
        if self.backend == "vllm":
            engine = (
                f"vLLM on GPU {gpus}: {self.data_parallel_size} replica(s) x tensor parallel "
                f"{self.tensor_parallel_size}, {self.gpu_memory_utilization:.0%} of each GPU's memory"
            )
        else:
            engine = f"HF engine on GPU {gpus}"
        if self.colocated:
            return [f"{engine}; the learner shares GPU {self.learner_gpu}"]
        return [engine, f"learner on GPU {self.learner_gpu} (its own)"]


def resolve_placement(cfg: Any, gpu_count: int) -> Placement:
    """Lay out a run (a ``config.Config``) on a machine that shows ``gpu_count`` GPUs.

    Raises :class:`PlacementError` when the config names GPUs that are not there, asks for
    a GPU on a machine without one, or cannot split the engine GPUs into replicas.
    """
    p = cfg.placement
    backend = cfg.engine.backend
    wants_gpu = cfg.run.device == "cuda" or backend == "vllm" or cfg.model.qlora
    if cfg.run.device == "cpu" or (gpu_count == 0 and not wants_gpu):
        return Placement(gpu_count=gpu_count, engine_gpus=(), learner_gpu=None, backend=backend)
    if gpu_count == 0:
        raise PlacementError(
            "this config needs a CUDA GPU and none is visible; on a CPU machine run configs/tiny.toml, or add "
            "--set 'run.device=\"cpu\"' --set 'engine.backend=\"hf\"' --set model.qlora=false"
        )
    gpus = list(p.gpus) if p.gpus is not None else list(range(gpu_count))
    missing = [g for g in gpus if g >= gpu_count]
    if missing:
        raise PlacementError(
            f"placement.gpus names GPU {', '.join(map(str, missing))} but this machine shows {gpu_count} "
            f"(numbered 0-{gpu_count - 1}); set placement.gpus to some of {list(range(gpu_count))}, "
            "or leave it unset to use them all"
        )
    if p.learner_gpu is not None and p.learner_gpu not in gpus:
        raise PlacementError(
            f"placement.learner_gpu = {p.learner_gpu} is not among the run's GPUs {gpus}; "
            "pick one of them or leave learner_gpu unset"
        )
    if len(gpus) == 1:
        if p.tensor_parallel_size != 1:
            raise PlacementError(
                f"placement.tensor_parallel_size = {p.tensor_parallel_size} needs that many engine GPUs "
                "besides the learner's; this run has one GPU: set it to 1"
            )
        return Placement(
            gpu_count=gpu_count,
            engine_gpus=(gpus[0],),
            learner_gpu=gpus[0],
            gpu_memory_utilization=cfg.engine.gpu_memory_utilization,
            backend=backend,
        )
    learner = p.learner_gpu if p.learner_gpu is not None else gpus[0]
    engine = tuple(g for g in gpus if g != learner)
    if backend != "vllm":
        return Placement(
            gpu_count=gpu_count,
            engine_gpus=engine[:1],
            learner_gpu=learner,
            gpu_memory_utilization=p.dedicated_memory_utilization,
            backend=backend,
        )
    tp = p.tensor_parallel_size
    if len(engine) % tp:
        raise PlacementError(
            f"placement.tensor_parallel_size = {tp} does not divide the {len(engine)} engine GPU(s) "
            f"({', '.join(map(str, engine))}); choose a divisor of {len(engine)} or change placement.gpus"
        )
    return Placement(
        gpu_count=gpu_count,
        engine_gpus=engine,
        learner_gpu=learner,
        tensor_parallel_size=tp,
        data_parallel_size=len(engine) // tp,
        gpu_memory_utilization=p.dedicated_memory_utilization,
        backend=backend,
    )


def replica_placement(cfg: Any, gpu_count: int) -> Placement:
    """Lay out one remote engine replica (``[cluster]``) on its node, where Ray shows it the
    ``gpu_count`` GPUs it reserved (``cluster.engine_gpus``). The learner is elsewhere (on the
    driver), so the engine owns them all: vLLM splits them into ``tensor_parallel_size``-wide
    replicas of its own, at ``dedicated_memory_utilization`` (that share of it for a replica
    that reserved part of a GPU); the HF engine uses the first.

    Raises :class:`PlacementError` when the replica should run on a GPU and sees none, or
    its GPUs do not split by ``tensor_parallel_size``.
    """
    backend = cfg.engine.backend
    share = float(cfg.cluster.engine_gpus)
    if cfg.run.device == "cpu" or share == 0:
        return Placement(gpu_count=gpu_count, engine_gpus=(), learner_gpu=None, backend=backend)
    if gpu_count == 0:
        raise PlacementError(
            f"this engine replica reserved {share:g} GPU(s) but sees none (CUDA_VISIBLE_DEVICES); "
            "check the node's GPUs and drivers, or set cluster.engine_gpus = 0 for CPU replicas"
        )
    gpus = tuple(range(gpu_count))
    tp = cfg.placement.tensor_parallel_size if backend == "vllm" else 1
    if gpu_count % tp:
        raise PlacementError(
            f"placement.tensor_parallel_size = {tp} does not divide the {gpu_count} GPU(s) of an "
            "engine replica (cluster.engine_gpus); make engine_gpus a multiple of it"
        )
    return Placement(
        gpu_count=gpu_count,
        engine_gpus=gpus if backend == "vllm" else gpus[:1],
        learner_gpu=None,
        tensor_parallel_size=tp,
        data_parallel_size=gpu_count // tp if backend == "vllm" else 1,
        gpu_memory_utilization=cfg.placement.dedicated_memory_utilization * min(share, 1.0),
        backend=backend,
    )
