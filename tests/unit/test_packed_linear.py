"""oneDNN-packed linear layers (engine/packed.py): the same outputs as the plain layers, in
2-D and 3-D, in float32 and bf16 (the engine's LoRA over packed layers: tests/unit/test_engine_lora.py); trainable layers stay
plain, and a gradient never goes through the packed copy. Sibling projections (q/k/v, gate/up)
share one stacked matmul per input, and stay correct when fed different inputs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from spade_async.engine.packed import PackedLinear, SiblingLinear, can_pack, pack_linears
from spade_async.testing.tiny import tiny_llama

pytestmark = pytest.mark.skipif(not can_pack(), reason="this torch build has no oneDNN")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(16, 96), (16, 1, 96), (3, 37, 96)])
def test_a_packed_linear_computes_what_the_plain_one_does(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    plain = nn.Linear(96, 160, bias=True).to(dtype).requires_grad_(False)
    packed = PackedLinear.from_linear(plain, rows_hint=16)
    x = torch.randn(*shape, dtype=dtype)
    with torch.inference_mode():
        want, got = plain(x), packed(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(got.float(), want.float(), atol=tol, rtol=tol)
    assert packed.weight is plain.weight  # the parameter is shared, not copied


def test_a_gradient_goes_through_the_plain_weight() -> None:
    plain = nn.Linear(32, 8).requires_grad_(False)
    packed = PackedLinear.from_linear(plain, rows_hint=4)
    x = torch.randn(4, 32, requires_grad=True)
    packed(x).sum().backward()
    assert x.grad is not None
    assert torch.allclose(x.grad, plain.weight.sum(0).expand(4, 32))


def test_packing_a_model_keeps_its_logits_and_skips_trainable_layers() -> None:
    model = tiny_llama()
    ids = torch.randint(0, 300, (2, 9))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    model.model.layers[0].mlp.down_proj.weight.requires_grad_(True)
    for name, p in model.named_parameters():
        if "down_proj" not in name or ".0." not in name:
            p.requires_grad_(False)
    n = pack_linears(model, rows_hint=2)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert n == len(linears) - 1  # every frozen one (7 per layer + the tied head), not the trainable one
    assert type(model.model.layers[0].mlp.down_proj) is nn.Linear
    assert isinstance(model.lm_head, PackedLinear) and model.lm_head.weight is model.model.embed_tokens.weight
    with torch.inference_mode():
        after = model(input_ids=ids).logits
    assert torch.allclose(before, after, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sibling_projections_share_one_matmul_per_input_with_the_same_logits(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tiny_llama(dtype=dtype).requires_grad_(False)
    ids = torch.randint(0, 300, (3, 7))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    assert pack_linears(model, rows_hint=3) == 2 * 7 + 1
    attention, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    for sibling in (attention.q_proj, attention.k_proj, attention.v_proj, mlp.gate_proj, mlp.up_proj):
        assert isinstance(sibling, SiblingLinear)
    assert attention.q_proj._product is attention.v_proj._product is not mlp.up_proj._product
    assert isinstance(attention.o_proj, PackedLinear) and isinstance(mlp.down_proj, PackedLinear)

    calls: list[tuple[int, ...]] = []
    linear_pointwise = torch.ops.mkldnn._linear_pointwise

    def counted(x: torch.Tensor, *args: object) -> torch.Tensor:
        calls.append(tuple(x.shape))
        return linear_pointwise(x, *args)

    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", counted)
    with torch.inference_mode():
        after = model(input_ids=ids).logits
    assert len(calls) == 2 * 4 + 1  # per layer: qkv, o, gate+up, down; then the head
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(after.float(), before.float(), atol=tol, rtol=tol)


def test_a_sibling_fed_another_input_computes_its_own_columns() -> None:
    model = tiny_llama().requires_grad_(False)
    attention = model.model.layers[1].self_attn
    plain = {name: getattr(attention, name) for name in ("q_proj", "k_proj", "v_proj")}
    pack_linears(model, rows_hint=2)
    x, y = torch.randn(2, 64), torch.randn(2, 64)
    with torch.inference_mode():
        got = [attention.q_proj(x), attention.k_proj(y), attention.v_proj(x), attention.q_proj(y)]
    want = [plain["q_proj"](x), plain["k_proj"](y), plain["v_proj"](x), plain["q_proj"](y)]
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and torch.allclose(g, w, atol=1e-5)
