"""The HF engine's own LoRA (engine/lora.py) against PEFT's: the same outputs from the same
adapter folder (plain and packed base layers, float32 and bf16, rsLoRA's scale); a later
adapter replaces the earlier one's deltas, including on layers it does not target; and an
adapter it cannot apply exactly is refused with the reason named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from spade_async.engine.lora import FLOAT32_DELTA_ROWS, AdapterFormatError, LoRALinear, apply_lora, read_lora
from spade_async.engine.packed import can_pack, pack_linears
from spade_async.testing.tiny import tiny_llama
from spade_async.util.errors import UserError


def _tiny_model(dtype: torch.dtype = torch.float32) -> nn.Module:
    return tiny_llama(dtype=dtype).requires_grad_(False)


def _save_adapter(folder: Path, targets: list[str], seed: int, **extra: object) -> Path:
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    model = get_peft_model(_tiny_model(), LoraConfig(r=4, lora_alpha=8, target_modules=targets, **extra))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            nn.init.normal_(p, std=0.5)  # a non-zero adapter: its term must show in the output
    model.save_pretrained(folder)
    return folder


def _peft_logits(folder: Path, ids: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    from peft import PeftModel

    model = PeftModel.from_pretrained(_tiny_model(dtype), folder, is_trainable=False).eval()
    with torch.inference_mode():
        return model(input_ids=ids).logits.float()


def _logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=ids).logits.float()


@pytest.mark.parametrize("packed", [False, True])
def test_the_engine_s_lora_computes_what_peft_does(tmp_path: Path, packed: bool) -> None:
    if packed and not can_pack():
        pytest.skip("this torch build has no oneDNN")
    folder = _save_adapter(tmp_path / "a", ["q_proj", "v_proj", "up_proj", "down_proj"], seed=1)
    ids = torch.randint(0, 300, (2, 9))
    model = _tiny_model()
    if packed:
        assert pack_linears(model) > 0
    base = _logits(model, ids)
    assert apply_lora(model, read_lora(folder)) == 4 * 2  # 4 targets x 2 layers
    got = _logits(model, ids)
    want = _peft_logits(folder, ids)
    assert torch.allclose(got, want, atol=1e-4)
    assert not torch.allclose(got, base, atol=1e-2)  # the adapter did change the output
    assert isinstance(model.model.layers[0].self_attn.q_proj, LoRALinear)
    assert not isinstance(model.model.layers[0].self_attn.k_proj, LoRALinear)  # not a target: left alone


@pytest.mark.parametrize("shape", [(1, 5), (2, 9), (2, 40)])  # below and above FLOAT32_DELTA_ROWS rows
def test_bf16_within_bf16_rounding_of_peft(tmp_path: Path, shape: tuple[int, int]) -> None:
    folder = _save_adapter(tmp_path / "a", ["q_proj", "k_proj", "o_proj", "gate_proj"], seed=2)
    ids = torch.randint(0, 300, shape)
    model = _tiny_model(torch.bfloat16)
    apply_lora(model, read_lora(folder))
    got, want = _logits(model, ids), _peft_logits(folder, ids, torch.bfloat16)
    exact = _peft_logits(folder, ids, torch.float32)
    assert (got - exact).abs().mean() <= 1.5 * (want - exact).abs().mean() + 1e-3  # no worse than PEFT in bf16


def test_a_few_rows_use_the_float32_factors_and_many_rows_the_layer_s_dtype() -> None:
    """Both give the exact delta within bf16 rounding; which factors each used is shown by
    poisoning the float32 ones afterwards."""
    torch.manual_seed(0)
    base = nn.Linear(64, 96, bias=False).to(torch.bfloat16).requires_grad_(False)
    layer = LoRALinear(base)
    down, up = torch.randn(4, 64) * 0.1, torch.randn(96, 4) * 0.1
    layer.set_delta(down, up, torch.bfloat16)
    for rows in (FLOAT32_DELTA_ROWS - 1, FLOAT32_DELTA_ROWS, 200):
        x = torch.randn(rows, 64).to(torch.bfloat16)
        exact = x.double() @ base.weight.double().t() + x.double() @ down.double().t() @ up.double().t()
        with torch.inference_mode():
            got = layer(x).double()
        assert (got - exact).abs().max() <= 0.02 * exact.abs().max(), rows
    layer.down = torch.full_like(down, float("nan"))
    with torch.inference_mode():
        assert layer(torch.ones(FLOAT32_DELTA_ROWS - 1, 64, dtype=torch.bfloat16)).isnan().all()
        assert layer(torch.ones(FLOAT32_DELTA_ROWS, 64, dtype=torch.bfloat16)).isfinite().all()


def test_rslora_scale(tmp_path: Path) -> None:
    folder = _save_adapter(tmp_path / "a", ["q_proj", "gate_proj"], seed=3, use_rslora=True)
    ids = torch.randint(0, 300, (1, 7))
    model = _tiny_model()
    apply_lora(model, read_lora(folder))
    assert torch.allclose(_logits(model, ids), _peft_logits(folder, ids), atol=1e-4)


def test_a_later_adapter_replaces_every_delta_and_none_restores_the_base(tmp_path: Path) -> None:
    first = _save_adapter(tmp_path / "v1", ["q_proj", "v_proj"], seed=4)
    second = _save_adapter(tmp_path / "v2", ["q_proj"], seed=5)
    ids = torch.randint(0, 300, (2, 8))
    model = _tiny_model()
    base = _logits(model, ids)
    apply_lora(model, read_lora(first))
    assert apply_lora(model, read_lora(second)) == 2
    assert model.model.layers[1].self_attn.v_proj.down is None  # v1's v_proj delta is gone
    assert torch.allclose(_logits(model, ids), _peft_logits(second, ids), atol=1e-4)
    assert apply_lora(model, None) == 0
    assert torch.allclose(_logits(model, ids), base, atol=1e-6)


def test_an_adapter_it_cannot_apply_exactly_is_refused_by_name(tmp_path: Path) -> None:
    folder = _save_adapter(tmp_path / "dora", ["q_proj"], seed=6, use_dora=True)
    with pytest.raises(AdapterFormatError, match="use_dora") as err:
        read_lora(folder)
    assert isinstance(err.value, UserError)  # what a person reads, not a traceback

    patterned = _save_adapter(tmp_path / "pattern", ["q_proj"], seed=7, rank_pattern={"q_proj": 2})
    with pytest.raises(AdapterFormatError, match="rank_pattern"):
        read_lora(patterned)

    with pytest.raises(AdapterFormatError, match=r"adapter_model\.safetensors is missing"):
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
        read_lora(tmp_path / "empty")


def test_an_adapter_for_another_model_names_the_layer(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    wider = LlamaForCausalLM(
        LlamaConfig(vocab_size=300, hidden_size=96, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    )
    get_peft_model(wider, LoraConfig(r=4, target_modules=["q_proj"])).save_pretrained(tmp_path / "wide")
    with pytest.raises(AdapterFormatError, match=r"model\.layers\.0\.self_attn\.q_proj.*do not fit"):
        apply_lora(_tiny_model(), read_lora(tmp_path / "wide"))
