"""`engine.merge_lora` through the run's engine (`build_engine`, packed weights, lean decode):
with the switch on every load merges the adapter into the weights (no per-layer delta left,
the packed copies rebuilt) and samples what the unmerged engine samples; off, the adapter is
served as deltas. Guards the wire from the config to ``apply_lora(merge=...)``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.hf import HFEngine
from spade_async.engine.lora import LoRALinear

pytestmark = pytest.mark.anyio


def _save(tiny_model_dir: Path, folder: Path, targets: list[str], seed: int) -> str:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
        LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False),
    )
    model.save_pretrained(str(folder))
    return str(folder)


async def test_the_run_s_engine_merges_each_adapter_when_merge_lora_is_on(tiny_model_dir: Path, tmp_path: Path) -> None:
    from spade_async.config import Config
    from spade_async.engine.factory import build_engine

    cfg = Config.model_validate({"run": {"device": "cpu"}, "model": {"dtype": "float32"}})
    engines = {}
    for merge in (True, False):
        run = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"merge_lora": merge})})
        engine = build_engine(run, str(tiny_model_dir))
        assert isinstance(engine, HFEngine) and engine.merge_lora is merge
        engines[merge] = engine
    merged, plain = engines[True], engines[False]
    q = merged.model.model.layers[0].self_attn.q_proj
    base_q = q.weight.detach().clone()
    prompt = [1, 2, 3, 4, 5]
    for version, targets in ((1, ["q_proj", "up_proj"]), (2, ["q_proj", "o_proj", "down_proj"])):
        path = _save(tiny_model_dir, tmp_path / f"v{version}", targets, seed=version)
        await merged.load_adapter(version, path)
        await plain.load_adapter(version, path)
        assert merged.adapted_layers == plain.adapted_layers == 2 * len(targets)
        assert not any(isinstance(m, LoRALinear) for m in merged.model.modules())  # merged: no deltas per call
        assert any(isinstance(m, LoRALinear) for m in plain.model.modules())
        assert not torch.equal(q.weight, base_q)  # q_proj now holds W + B A
        requests = [GenerationRequest(p, Sampling(max_new_tokens=8, seed=3)) for p in (prompt, prompt[:2])]
        for a, b in zip(await merged.generate(requests), await plain.generate(requests), strict=True):
            assert a.adapter_version == b.adapter_version == version
            assert a.token_ids == b.token_ids
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
