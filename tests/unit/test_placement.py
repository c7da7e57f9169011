"""Placement: which GPUs generate and which train, resolved on CPU with made-up GPU counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.config import Config, load_config
from spade_async.hardware.placement import PlacementError, resolve_placement
from spade_async.run.assemble import RunError, preflight

ROOT = Path(__file__).resolve().parents[2]


def vllm_cfg(**placement: object) -> Config:
    return Config.model_validate(
        {
            "run": {"device": "cuda"},
            "engine": {"backend": "vllm", "gpu_memory_utilization": 0.4},
            "model": {"lora_rank": 32},
            "placement": placement,
        }
    )


def test_cpu_run_uses_no_gpu_even_when_there_are_some() -> None:
    p = resolve_placement(Config.model_validate({"run": {"device": "cpu"}}), gpu_count=4)
    assert (p.engine_gpus, p.learner_gpu, p.learner_device, p.engine_device) == ((), None, "cpu", "cpu")


def test_auto_device_without_gpus_is_cpu() -> None:
    p = resolve_placement(Config(), gpu_count=0)
    assert not p.on_gpu and p.describe() == ["engine and learner on the CPU (no GPU in use)"]


def test_one_gpu_colocates_at_the_engine_share() -> None:
    p = resolve_placement(vllm_cfg(), gpu_count=1)
    assert p.colocated and p.engine_gpus == (0,) and p.learner_device == "cuda:0"
    assert p.gpu_memory_utilization == 0.4
    assert (p.tensor_parallel_size, p.data_parallel_size) == (1, 1)
    assert "shares GPU 0" in p.describe()[0]


@pytest.mark.parametrize(("count", "engine", "dp"), [(2, (1,), 1), (4, (1, 2, 3), 3), (8, (1, 2, 3, 4, 5, 6, 7), 7)])
def test_many_gpus_give_the_learner_its_own_and_vllm_the_rest(count: int, engine: tuple[int, ...], dp: int) -> None:
    p = resolve_placement(vllm_cfg(), gpu_count=count)
    assert not p.colocated
    assert p.learner_gpu == 0 and p.engine_gpus == engine
    assert (p.tensor_parallel_size, p.data_parallel_size) == (1, dp)
    assert p.gpu_memory_utilization == 0.9  # dedicated GPUs: vLLM may take nearly all of each


def test_tensor_parallel_splits_engine_gpus_into_replicas() -> None:
    # 7 engine GPUs do not split into pairs
    with pytest.raises(PlacementError, match="does not divide the 7 engine GPU"):
        resolve_placement(vllm_cfg(tensor_parallel_size=2), gpu_count=8)
    p = resolve_placement(vllm_cfg(tensor_parallel_size=2, gpus=[0, 1, 2, 3, 4]), gpu_count=8)
    assert (p.engine_gpus, p.tensor_parallel_size, p.data_parallel_size) == ((1, 2, 3, 4), 2, 2)


def test_named_gpus_that_do_not_exist_name_the_fix() -> None:
    with pytest.raises(PlacementError) as info:
        resolve_placement(vllm_cfg(gpus=[0, 3]), gpu_count=2)
    message = str(info.value)
    assert "names GPU 3" in message and "shows 2" in message and "set placement.gpus" in message


def test_tensor_parallel_on_one_gpu_is_refused() -> None:
    with pytest.raises(PlacementError, match="set it to 1"):
        resolve_placement(vllm_cfg(tensor_parallel_size=2), gpu_count=1)


def test_gpu_config_on_a_machine_without_gpus() -> None:
    with pytest.raises(PlacementError, match="needs a CUDA GPU and none is visible"):
        resolve_placement(vllm_cfg(), gpu_count=0)


def test_hf_engine_on_many_gpus_uses_one_engine_gpu() -> None:
    cfg = Config.model_validate({"run": {"device": "cuda"}})
    p = resolve_placement(cfg, gpu_count=4)
    assert p.engine_device == "cuda:1" and p.learner_device == "cuda:0" and p.engine_gpus == (1,)


def test_learner_gpu_outside_the_run_gpus_is_a_config_error() -> None:
    from spade_async.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match=r"placement\.learner_gpu: 5 is not among placement\.gpus"):
        validate_config({"placement": {"gpus": [0, 1], "learner_gpu": 5}})


def test_preflight_turns_a_bad_placement_into_a_run_error() -> None:
    # the placement check comes before the check that vllm is installed
    with pytest.raises(RunError, match="names GPU 2"):
        preflight(vllm_cfg(gpus=[2]), gpu_count=1)
    with pytest.raises(RunError, match="needs a CUDA GPU and none is visible"):
        preflight(vllm_cfg(), gpu_count=0)


def test_four_gpu_preset_puts_the_learner_on_one_and_vllm_on_three() -> None:
    cfg = load_config(ROOT / "configs" / "games_qwen3_8b_4gpu.toml")
    p = resolve_placement(cfg, gpu_count=4)
    assert p.learner_gpu == 0 and p.engine_gpus == (1, 2, 3) and p.data_parallel_size == 3
    assert cfg.sandbox.max_children >= 3 * 256  # one env child per sequence vLLM can batch
    with pytest.raises(PlacementError, match="names GPU 2, 3"):
        resolve_placement(cfg, gpu_count=2)


@pytest.mark.parametrize("name", ["games_qwen3_4b.toml", "games_qwen3_8b.toml"])
def test_single_gpu_presets_do_not_cap_vllm_batching(name: str) -> None:
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.sandbox.max_children >= 256  # vLLM's default max_num_seqs
    assert resolve_placement(cfg, gpu_count=1).colocated
    assert cfg.engine.agent.enable_thinking is False and cfg.engine.hint.enable_thinking is False


def test_config_show_prints_the_resolved_placement() -> None:
    out = CliRunner().invoke(cli, ["config", "show", str(ROOT / "configs" / "games_qwen3_8b_4gpu.toml"), "--gpus", "4"])
    assert out.exit_code == 0
    assert "# placement on a machine with 4 GPU(s):" in out.output
    assert "#   vLLM on GPU 1, 2, 3: 3 replica(s) x tensor parallel 1" in out.output
    assert "#   learner on GPU 0 (its own)" in out.output
    # still valid TOML: the placement lines are comments
    import tomllib

    tomllib.loads(out.output)
    bad = CliRunner().invoke(cli, ["config", "show", str(ROOT / "configs" / "games_qwen3_8b_4gpu.toml"), "--gpus", "1"])
    assert bad.exit_code == 0 and "cannot run here: placement.gpus names GPU 1, 2, 3" in bad.output


def test_open_file_limit_is_raised_for_many_env_children(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    from spade_async.run.assemble import raise_open_file_limit

    limits = {"soft": 1024, "hard": 4096}
    set_to: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (limits["soft"], limits["hard"]))
    monkeypatch.setattr(resource, "setrlimit", lambda _kind, value: set_to.append(value))
    raise_open_file_limit(32)  # 32 children fit in 1024
    assert set_to == []
    raise_open_file_limit(768)
    assert set_to == [(4 * 768 + 512, 4096)]
    limits["hard"] = 2048
    with pytest.raises(RunError, match=r"ulimit -n 3584\) or lower sandbox\.max_children"):
        raise_open_file_limit(768)
