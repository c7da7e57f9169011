"""An adapter saved by our trainer passes vLLM's own LoRA loader checks.

The trainer takes a real GRPO step on a tiny random Qwen3 (the real architecture and
projection names) and saves its PEFT folder; then vLLM's worker-side loading path runs on
it exactly as ``add_lora`` would on a GPU worker: ``WorkerLoRAManager._load_adapter`` with
the supported modules of vLLM's own Qwen3 model class (built on the meta device) and the
LoRA config vLLM derived from our engine args -- ``PEFTHelper.validate_legal`` (rank within
``max_lora_rank``, no modules_to_save, no DoRA, no bias) and
``LoRAModel.from_local_checkpoint`` (every tensor targets a module vLLM can adapt).
"""

from __future__ import annotations

import json
import math
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from vllm.config import set_current_vllm_config
from vllm.lora.lora_model import LoRAModel
from vllm.lora.utils import get_supported_lora_modules
from vllm.lora.worker_manager import WorkerLoRAManager

from spade_async.config import VLLM_LORA_RANKS, LearnerConfig, ModelConfig, load_config
from spade_async.engine.vllm import build_engine_args, build_lora_request
from spade_async.hardware.placement import resolve_placement
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer

from .conftest import REPO

PRESET = "games_qwen3_4b.toml"


@pytest.fixture(scope="module")
def preset_model_cfg() -> ModelConfig:
    return load_config(REPO / "configs" / PRESET).model


@pytest.fixture(scope="module")
def adapter(tiny_qwen3: str, preset_model_cfg: ModelConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our trainer's adapter after one real GRPO step (rank and targets from the 4B preset)."""
    model_cfg = preset_model_cfg.model_copy(update={"qlora": False, "dtype": "float32", "name": tiny_qwen3})
    trainer = Trainer(tiny_qwen3, model_cfg, LearnerConfig(lr=1e-3, micro_batch=2, max_seq_len=64), seed=0)
    g = torch.Generator().manual_seed(0)
    samples = [
        TrainSample(
            "agent",
            torch.randint(10, 1000, (24,), generator=g).tolist(),
            [0] * 8 + [1] * 16,
            [0.0] * 8 + [-math.log(151936)] * 16,
            1.0 if i % 2 else -1.0,
            0,
        )
        for i in range(4)
    ]
    metrics = trainer.train_step(samples)
    assert metrics["version"] == 1 and metrics["grad_norm"] > 0
    path = tmp_path_factory.mktemp("adapters") / "v1"
    trainer.save_adapter(path)
    return path


def vllm_setup(tiny_qwen3: str, rank: int) -> tuple[Any, Any]:
    """vLLM's engine config for our args on the tiny model, and vLLM's Qwen3 model on meta."""
    from vllm.model_executor.models.qwen3 import Qwen3ForCausalLM

    cfg = load_config(REPO / "configs" / PRESET)
    cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"lora_rank": rank})})
    vc = build_engine_args(cfg, resolve_placement(cfg, 1), tiny_qwen3).create_engine_config()
    with set_current_vllm_config(vc), torch.device("meta"):
        model = Qwen3ForCausalLM(vllm_config=vc)
    return vc, model


def load_in_vllm(path: Path, vc: Any, model: Any) -> Any:
    """``WorkerLoRAManager._load_adapter`` (vLLM's code) on a worker that holds ``model``."""
    worker = types.SimpleNamespace(
        _adapter_manager=types.SimpleNamespace(
            supported_lora_modules=get_supported_lora_modules(model),
            packed_modules_mapping=model.packed_modules_mapping,
            model=model,
            moe_ep_load_spec=None,
            _validate_moe_lora_format=lambda lora: None,  # dense model: no MoE layout
            _validate_classification_head_lora=lambda lora: None,  # a causal LM: no head
        ),
        max_position_embeddings=vc.model_config.max_model_len,
        lora_config=vc.lora_config,
        _lora_model_cls=LoRAModel,
        vocab_size=vc.model_config.get_vocab_size(),
    )
    with set_current_vllm_config(vc):
        return WorkerLoRAManager._load_adapter(worker, build_lora_request(1, str(path)))  # type: ignore[arg-type]


def test_trainer_adapter_is_accepted_by_vllm(
    model_parallel: None, tiny_qwen3: str, adapter: Path, preset_model_cfg: ModelConfig
) -> None:
    rank = preset_model_cfg.lora_rank
    assert rank in VLLM_LORA_RANKS
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == rank and not config.get("modules_to_save") and not config.get("use_dora")
    assert config.get("bias", "none") == "none"
    assert set(config["target_modules"]) == set(preset_model_cfg.lora_targets)
    vc, model = vllm_setup(tiny_qwen3, rank)
    lora = load_in_vllm(adapter, vc, model)
    assert isinstance(lora, LoRAModel) and lora.id == 2  # version 1 -> id 2
    layers = {name.split(".")[-1] for name in lora.loras}
    assert layers == set(preset_model_cfg.lora_targets)  # q/k/v/o and gate/up/down, no embeddings
    n_layers = vc.model_config.hf_config.num_hidden_layers
    assert len(lora.loras) == n_layers * len(preset_model_cfg.lora_targets)
    assert all(w.rank == rank for w in lora.loras.values())
    assert any(float(w.lora_b.abs().max()) > 0 for w in lora.loras.values())  # the trained weights arrived
    print(
        f"adapter {adapter.name} (rank {rank}, {len(lora.loras)} modules: {sorted(layers)}) ACCEPTED by "
        f"vLLM's LoRA loader (supported modules {sorted(get_supported_lora_modules(model))}, "
        f"packed {model.packed_modules_mapping})"
    )


def test_vllm_loader_rejects_what_it_cannot_serve(
    model_parallel: None, tiny_qwen3: str, adapter: Path, tmp_path: Path, preset_model_cfg: ModelConfig
) -> None:
    """The check can fail: a rank above max_lora_rank, DoRA, bias, and modules_to_save."""
    vc, model = vllm_setup(tiny_qwen3, 16)  # max_lora_rank 16 < the adapter's 32
    with pytest.raises(ValueError, match="greater than max_lora_rank"):
        load_in_vllm(adapter, vc, model)
    vc, model = vllm_setup(tiny_qwen3, preset_model_cfg.lora_rank)
    for change, message in (
        ({"use_dora": True}, "DoRA"),
        ({"bias": "all"}, "bias"),
        ({"modules_to_save": ["lm_head"]}, "modules_to_save"),
    ):
        bad = tmp_path / message
        bad.mkdir()
        (bad / "adapter_model.safetensors").write_bytes((adapter / "adapter_model.safetensors").read_bytes())
        config = json.loads((adapter / "adapter_config.json").read_text())
        (bad / "adapter_config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=message):
            load_in_vllm(bad, vc, model)
    print("vLLM's loader rejects: rank 32 > max_lora_rank 16, DoRA, bias, modules_to_save=[lm_head]")
