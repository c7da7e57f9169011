"""The engine's merged LoRA (`engine.merge_lora`, engine/lora.py ``apply_lora(merge=True)``):
the merged weights give what the per-layer deltas give (plain and packed base layers, float32
and bf16); a second adapter is merged from the base, not on top of the first; the base model
comes back bit for bit, packed copies included; and nothing is wrapped or half-changed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from spade_async.engine.lora import AdapterFormatError, LoRALinear, apply_lora, read_lora
from spade_async.engine.packed import PackedLinear, SiblingLinear, can_pack, pack_linears
from tests.unit.test_engine_lora import _logits, _peft_logits, _save_adapter, _tiny_model

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _packed_copies(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every oneDNN-packed weight of ``model`` (a stacked sibling product once), by module path,
    read back in the plain layout."""
    out: dict[str, torch.Tensor] = {}
    for name, m in model.named_modules():
        if isinstance(m, PackedLinear):
            out[name] = m.packed.to_dense()
        elif isinstance(m, SiblingLinear) and m._start == 0:
            out[name] = m._product.packed.to_dense()
    return out


def _maybe_pack(model: nn.Module, packed: bool) -> nn.Module:
    if packed:
        if not can_pack():
            pytest.skip("this torch build has no oneDNN")
        assert pack_linears(model) > 0
    return model


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_merged_weights_give_the_unmerged_output(tmp_path: Path, dtype: torch.dtype, packed: bool) -> None:
    folder = _save_adapter(tmp_path / "a", ALL, seed=11)
    ids = torch.randint(0, 300, (3, 12))
    unmerged = _maybe_pack(_tiny_model(dtype), packed)
    merged = _maybe_pack(_tiny_model(dtype), packed)
    base = _logits(merged, ids)
    assert apply_lora(unmerged, read_lora(folder)) == apply_lora(merged, read_lora(folder), merge=True) == 7 * 2
    assert not any(isinstance(m, LoRALinear) for m in merged.modules())  # no per-call delta left
    got, want = _logits(merged, ids), _logits(unmerged, ids)
    assert not torch.allclose(got, base, atol=1e-2)  # the adapter did change the output
    if dtype == torch.float32:
        assert torch.allclose(got, want, atol=1e-4)
        assert torch.allclose(got, _peft_logits(folder, ids), atol=1e-4)
    else:  # both within bf16 rounding of the exact (float32) adapter; merging costs no more than that
        exact = _peft_logits(folder, ids, torch.float32)
        assert (got - exact).abs().mean() <= 1.5 * (want - exact).abs().mean() + 1e-3
        assert (got - want).abs().mean() <= 0.05 * exact.abs().mean()


def test_the_merge_is_computed_in_float32_and_rounded_once(tmp_path: Path) -> None:
    folder = _save_adapter(tmp_path / "a", ["q_proj"], seed=12)
    model = _tiny_model(torch.bfloat16)
    q = model.model.layers[0].self_attn.q_proj
    w = q.weight.detach().clone()
    weights = read_lora(folder)
    apply_lora(model, weights, merge=True)
    down, up = weights.deltas["model.layers.0.self_attn.q_proj"]
    assert q.weight.dtype == torch.bfloat16 and not q.weight.requires_grad
    assert torch.equal(q.weight, (w.float() + up @ down).to(torch.bfloat16))


@pytest.mark.parametrize("packed", [False, True])
def test_a_second_adapter_is_merged_from_the_base_and_none_restores_it_bit_for_bit(
    tmp_path: Path, packed: bool
) -> None:
    first = _save_adapter(tmp_path / "v1", ["q_proj", "v_proj", "down_proj"], seed=13)
    second = _save_adapter(tmp_path / "v2", ["q_proj", "up_proj"], seed=14)
    ids = torch.randint(0, 300, (2, 10))
    model = _maybe_pack(_tiny_model(torch.bfloat16), packed)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    packs = _packed_copies(model)
    base = _logits(model, ids)

    apply_lora(model, read_lora(first), merge=True)
    assert apply_lora(model, read_lora(second), merge=True) == 2 * 2
    fresh = _maybe_pack(_tiny_model(torch.bfloat16), packed)
    apply_lora(fresh, read_lora(second), merge=True)
    assert torch.equal(_logits(model, ids), _logits(fresh, ids))  # the second alone, not both
    for m in model.modules():  # each packed copy is of the weight the layer now holds
        if isinstance(m, PackedLinear):
            assert torch.equal(m.packed.to_dense(), m.weight)
        elif isinstance(m, SiblingLinear):
            stacked = torch.cat([s.weight for s in m._product.members])
            assert torch.equal(m._product.packed.to_dense(), stacked)
    layer = model.model.layers[1]
    for name in ("v_proj", "down_proj"):  # the first's layers the second does not target: base again
        module = getattr(layer.self_attn, name, None) or getattr(layer.mlp, name)
        key = f"model.layers.1.{'self_attn' if name == 'v_proj' else 'mlp'}.{name}.weight"
        assert torch.equal(module.weight, weights[key])

    assert apply_lora(model, None, merge=True) == 0
    after = model.state_dict()
    assert after.keys() == weights.keys()
    assert all(torch.equal(after[k], weights[k]) for k in weights)
    again = _packed_copies(model)
    assert again.keys() == packs.keys() and all(torch.equal(again[k], packs[k]) for k in packs)
    assert torch.equal(_logits(model, ids), base)


def test_switching_between_merged_and_unmerged_serves_only_the_latest(tmp_path: Path) -> None:
    """The engine keeps one mode, but ``apply_lora`` must not stack a merge and a delta."""
    first = _save_adapter(tmp_path / "v1", ["q_proj", "gate_proj"], seed=15)
    second = _save_adapter(tmp_path / "v2", ["q_proj", "o_proj"], seed=16)
    ids = torch.randint(0, 300, (2, 8))
    model = _tiny_model()
    apply_lora(model, read_lora(first))
    apply_lora(model, read_lora(second), merge=True)
    assert all(m.down is None for m in model.modules() if isinstance(m, LoRALinear))
    assert torch.allclose(_logits(model, ids), _peft_logits(second, ids), atol=1e-4)
    apply_lora(model, read_lora(first))
    assert torch.allclose(_logits(model, ids), _peft_logits(first, ids), atol=1e-4)


def test_an_adapter_that_does_not_fit_changes_nothing(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    good = _save_adapter(tmp_path / "v1", ["q_proj"], seed=17)
    wider = LlamaForCausalLM(
        LlamaConfig(vocab_size=300, hidden_size=96, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    )
    get_peft_model(wider, LoraConfig(r=4, target_modules=["q_proj"])).save_pretrained(tmp_path / "wide")
    ids = torch.randint(0, 300, (1, 6))
    model = _tiny_model()
    apply_lora(model, read_lora(good), merge=True)
    served = _logits(model, ids)
    with pytest.raises(AdapterFormatError, match="do not fit"):
        apply_lora(model, read_lora(tmp_path / "wide"), merge=True)
    assert torch.equal(_logits(model, ids), served)  # the good adapter is still served
