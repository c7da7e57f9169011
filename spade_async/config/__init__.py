"""The run configuration: section models (:mod:`.sections`), loading with overrides and
error lines (:mod:`.load`), and the presets shipped with the package (:mod:`.presets`).

Callers import from here: ``from spade_async.config import Config, load_config``.
"""

from spade_async.config.load import (
    ConfigError,
    apply_overrides,
    config_to_toml,
    gpu_settings,
    load_config,
    parse_override,
    validate_config,
)
from spade_async.config.sections import (
    DOMAIN_KL,
    EMBEDDED_MODEL,
    SKILLS,
    VLLM_LORA_RANKS,
    ClusterConfig,
    Config,
    CorpusConfig,
    EngineConfig,
    EvalConfig,
    LearnerConfig,
    LogConfig,
    MemoryConfig,
    ModelConfig,
    PlacementConfig,
    RunConfig,
    SamplingConfig,
    SandboxConfig,
    Section,
    SelfPlayConfig,
    WarmStartConfig,
    cluster_engine_problem,
)

__all__ = [
    "DOMAIN_KL",
    "EMBEDDED_MODEL",
    "SKILLS",
    "VLLM_LORA_RANKS",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "CorpusConfig",
    "EngineConfig",
    "EvalConfig",
    "LearnerConfig",
    "LogConfig",
    "MemoryConfig",
    "ModelConfig",
    "PlacementConfig",
    "RunConfig",
    "SamplingConfig",
    "SandboxConfig",
    "Section",
    "SelfPlayConfig",
    "WarmStartConfig",
    "apply_overrides",
    "cluster_engine_problem",
    "config_to_toml",
    "gpu_settings",
    "load_config",
    "parse_override",
    "validate_config",
]
