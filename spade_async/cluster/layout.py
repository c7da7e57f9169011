"""What goes where on a Ray cluster, in words (``spade-async config show CONFIG --cluster``).

Why from the config alone: the report must work on the machine where a person writes the
config, before any cluster exists; it does not import Ray or connect to anything. What each
node really offers is checked when the run starts (each pool probes its node's isolation and
refuses below ``sandbox.min_isolation``).
"""

from __future__ import annotations

from spade_async.config import Config


def describe_cluster(cfg: Config, engine_lines: list[str]) -> list[str]:
    """Lines saying where the engine (local or its remote replicas), the learner, the database and
    the sandbox pools run."""
    cc, sb = cfg.cluster, cfg.sandbox
    here = "this machine (the driver)"
    if not cc.enabled:
        return [f"cluster off: everything runs on {here}; Ray is not imported"]
    where = {
        "local": "a private Ray cluster this run starts on this machine and stops at its end",
        "auto": "the Ray cluster this machine belongs to (ray start)",
    }.get(cc.address, f"the Ray cluster at {cc.address}")
    return [
        f"Ray: {where}",
        *(_engine_lines(cfg) if cc.engine_replicas else [f"{line} -- on {here}" for line in engine_lines]),
        f"run database, checkpoints, adapters, TUI data: {here}",
        f"sandbox: {cc.sandbox_pools} remote pool(s) (Ray actors, {cc.pool_cpus:g} CPU each, spread over the nodes), "
        f"each up to {sb.max_children} env children with every [sandbox] limit",
        f"sandbox: each pool probes its node at start and refuses below min_isolation = {sb.min_isolation!r}",
        f"sandbox: up to {cc.sandbox_pools * sb.max_children} env children in all; "
        f"the run plays at most {sb.max_children} episodes at once (sandbox.max_children)",
        (
            f"sandbox: a lost pool is restarted in the background (at most {cc.max_pool_restarts} restarts per run); "
            "its in-flight episodes count as errors"
            if cc.restart_lost_pools
            else "sandbox: a lost pool is not restarted (cluster.restart_lost_pools = false); its in-flight episodes count as errors"
        ),
    ]


def _engine_lines(cfg: Config) -> list[str]:
    """Where remote engine replicas go (``cluster.engine_replicas`` > 0)."""
    cc = cfg.cluster
    if cc.engine_gpus:
        reserve = f"{cc.engine_cpus:g} CPU and {cc.engine_gpus:g} GPU each"
        engine = "vLLM" if cfg.engine.backend == "vllm" else "the HF engine"
        if cfg.engine.backend == "vllm" and cc.engine_gpus >= 1:
            engine += f" (tensor parallel {cfg.placement.tensor_parallel_size})"
        engine += " on its GPU(s)"
    else:
        reserve = f"{cc.engine_cpus:g} CPU each"
        engine = ("vLLM's CPU build" if cfg.engine.backend == "vllm" else "the HF engine") + " on the CPU"
    adapters = (
        (
            "by content: each new adapter's files go once through Ray's object store to a private folder on "
            "each replica's node"
        )
        if cc.adapters == "content"
        else (
            "by shared path: each replica reads the run's adapter folder, which every engine node must mount "
            "at the same path"
        )
    )
    return [
        f"engine: {cc.engine_replicas} replica(s) (Ray actors, {reserve}, spread over the "
        f"nodes) running {engine}; model.name must resolve on every engine node",
        "engine: an environment's requests (an episode's turns, a group's plays) stay on one replica; "
        "a lost replica's requests are retried on the others",
        f"engine: adapters {adapters}",
        "learner (one LoRA), tokenizer and prompt rendering: this machine (the driver)",
    ]
