"""The vLLM engine's object builders, on CPU: what we ask vLLM for (engine args from the
placement, final-only sampling with the shared stop ids, LoRA ids > 0), and the LoRA-rank
rule. A recording stand-in for the ``vllm`` package captures the constructor arguments; the
contract check against the real package builds the same objects."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.config import VLLM_LORA_RANKS, Config, ConfigError, validate_config
from spade_async.engine import vllm as engine_vllm
from spade_async.engine.base import Sampling, stop_token_ids
from spade_async.hardware.placement import resolve_placement


class Recorded:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs
        for k, v in kwargs.items():
            setattr(self, k, v)


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    kinds = types.SimpleNamespace(CUMULATIVE="cumulative", DELTA="delta", FINAL_ONLY="final_only")
    modules = {
        "vllm": types.SimpleNamespace(SamplingParams=type("SamplingParams", (Recorded,), {})),
        "vllm.sampling_params": types.SimpleNamespace(RequestOutputKind=kinds),
        "vllm.engine": types.SimpleNamespace(),
        "vllm.engine.arg_utils": types.SimpleNamespace(AsyncEngineArgs=type("AsyncEngineArgs", (Recorded,), {})),
        "vllm.lora": types.SimpleNamespace(),
        "vllm.lora.request": types.SimpleNamespace(LoRARequest=type("LoRARequest", (Recorded,), {})),
        "vllm.inputs": types.SimpleNamespace(TokensPrompt=lambda **kw: dict(kw)),
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return kinds


def cfg(**placement: Any) -> Config:
    return Config.model_validate(
        {
            "run": {"device": "cuda", "seed": 7},
            "model": {"lora_rank": 32, "dtype": "bfloat16"},
            "engine": {"backend": "vllm", "gpu_memory_utilization": 0.4, "max_model_len": 8192},
            "placement": placement,
        }
    )


def test_engine_args_follow_the_placement(fake_vllm: Any) -> None:
    one = engine_vllm.build_engine_args(cfg(), resolve_placement(cfg(), 1), "/models/q")
    assert one.kwargs["gpu_memory_utilization"] == 0.4
    assert (one.kwargs["tensor_parallel_size"], one.kwargs["data_parallel_size"]) == (1, 1)
    four = engine_vllm.build_engine_args(cfg(), resolve_placement(cfg(), 4), "/models/q")
    assert (four.kwargs["tensor_parallel_size"], four.kwargs["data_parallel_size"]) == (1, 3)
    assert four.kwargs["gpu_memory_utilization"] == 0.9
    tp = engine_vllm.build_engine_args(
        cfg(tensor_parallel_size=2, gpus=[0, 1, 2]),
        resolve_placement(cfg(tensor_parallel_size=2, gpus=[0, 1, 2]), 4),
        "/m",
    )
    assert (tp.kwargs["tensor_parallel_size"], tp.kwargs["data_parallel_size"]) == (2, 1)
    k = four.kwargs
    assert k["model"] == "/models/q" and k["seed"] == 7 and k["max_model_len"] == 8192 and k["dtype"] == "bfloat16"
    assert k["enable_lora"] and k["max_lora_rank"] == 32 and k["enable_prefix_caching"]
    assert k["logprobs_mode"] == "processed_logprobs"  # logprobs after temperature/top-p, as GRPO needs


def test_sampling_params_are_final_only_with_the_shared_stop_ids(fake_vllm: Any) -> None:
    s = Sampling(temperature=0.7, top_p=0.9, max_new_tokens=64, stop=("}",), seed=5)
    params = engine_vllm.build_sampling_params(s, [2, 0])
    assert params.kwargs["output_kind"] == "final_only"  # not the O(n^2) cumulative default
    assert params.kwargs["stop_token_ids"] == [2, 0]
    assert (params.temperature, params.top_p, params.max_tokens, params.stop, params.seed) == (0.7, 0.9, 64, ["}"], 5)
    assert params.logprobs == 0 and params.include_stop_str_in_output
    assert engine_vllm.build_sampling_params(Sampling(), [2]).kwargs["stop"] is None


def test_lora_ids_are_positive_from_version_zero(fake_vllm: Any) -> None:
    first = engine_vllm.build_lora_request(0, "/run/ckpt/adapter")  # resume before any learner step
    assert first.lora_int_id == 1 and first.lora_name == "v0" and first.lora_path == "/run/ckpt/adapter"
    assert engine_vllm.build_lora_request(12, "/a").lora_int_id == 13
    assert len({engine_vllm.lora_int_id(v) for v in range(100)}) == 100
    assert engine_vllm.build_token_prompt([1, 2, 3]) == {"prompt_token_ids": [1, 2, 3]}


async def _swap(engine: Any) -> None:
    await engine.load_adapter(0, "/ckpt/adapter")
    await engine.load_adapter(1, "/adapters/v1")


@pytest.mark.anyio
async def test_adapter_swap_at_version_zero(fake_vllm: Any) -> None:
    class FakeAsyncLLM:
        def __init__(self) -> None:
            self.added: list[int] = []
            self.removed: list[int] = []

        async def add_lora(self, lora: Any) -> None:
            assert lora.lora_int_id > 0
            self.added.append(lora.lora_int_id)

        async def remove_lora(self, lora_id: int) -> None:
            self.removed.append(lora_id)

    engine = engine_vllm.VLLMEngine.__new__(engine_vllm.VLLMEngine)
    engine._engine, engine._lora, engine.adapter_version = FakeAsyncLLM(), None, 0
    await _swap(engine)
    assert engine._engine.added == [1, 2] and engine._engine.removed == [1] and engine.adapter_version == 1


def test_stop_ids_merge_tokenizer_and_generation_config() -> None:
    tok = types.SimpleNamespace(eos_token_id=151645)
    assert stop_token_ids(tok, types.SimpleNamespace(eos_token_id=[151645, 151643])) == [151645, 151643]
    assert stop_token_ids(tok, types.SimpleNamespace(eos_token_id=151643)) == [151645, 151643]
    assert stop_token_ids(tok, None) == [151645]


@pytest.mark.parametrize("rank", [2, 24, 48])
def test_vllm_rejects_ranks_it_cannot_serve(rank: int) -> None:
    with pytest.raises(ConfigError) as info:
        validate_config({"run": {"device": "cuda"}, "engine": {"backend": "vllm"}, "model": {"lora_rank": rank}})
    assert any("model.lora_rank" in p and "1, 8, 16, 32, 64, 128, 256, 320, 512" in p for p in info.value.problems)
    validate_config({"model": {"lora_rank": rank}})  # the HF engine serves any rank


def test_every_vllm_rank_is_accepted() -> None:
    for rank in VLLM_LORA_RANKS:
        validate_config({"run": {"device": "cuda"}, "engine": {"backend": "vllm"}, "model": {"lora_rank": rank}})


def test_a_bad_rank_exits_2_naming_the_allowed_ranks(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[run]\ndevice = "cuda"\n[engine]\nbackend = "vllm"\n[model]\nlora_rank = 24\n')
    for args in (["config", "show", str(path)], ["run", str(path), "--headless"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert (
            "model.lora_rank: vLLM serves LoRA ranks 1, 8, 16, 32, 64, 128, 256, 320, 512 only, not 24" in result.output
        )


def test_per_role_adapters_are_refused_where_the_engine_cannot_serve_them() -> None:
    """Only the HF engine on this machine serves the designer its own weights (``learner.adapters``)."""
    for cfg in (
        {"run": {"device": "cuda"}, "engine": {"backend": "vllm"}},
        {"cluster": {"enabled": True, "engine_replicas": 2}, "run": {"device": "cpu"}},
    ):
        with pytest.raises(ConfigError) as info:
            validate_config({**cfg, "learner": {"adapters": "per_role"}})
        assert any('learner.adapters = "per_role"' in p for p in info.value.problems), info.value.problems
        validate_config(cfg)  # shared: fine
    validate_config({"learner": {"adapters": "per_role"}})
