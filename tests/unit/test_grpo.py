"""GRPO loss math against hand-computed values (clip on/off, TIS cap, masks, KL, aggregation)."""

from __future__ import annotations

import math

import pytest
import torch

from spade_async.learner.grpo import (
    group_advantages,
    grpo_loss,
    selected_logprobs,
)

CLIP = {"clip_low": 0.2, "clip_high": 0.28}


def _loss(now, beh, adv, mask, **kw):
    args = {**CLIP, "tis_cap": 2.0, "agg": "grpo", **kw}
    return grpo_loss(now, beh, adv, mask, **args)


def _t(rows, grad=False):
    return torch.tensor(rows, dtype=torch.float64, requires_grad=grad)


# ---------------------------------------------------------------- advantages


def test_group_advantages_normalise_per_group_and_skip_zero_variance():
    adv, n_zero = group_advantages([1, 0, 1, 0, 1, 1, 0.5], ["a", "a", "a", "a", "b", "b", "c"])
    assert adv[:4] == pytest.approx([1, -1, 1, -1], abs=1e-5)  # mean .5, population std .5
    assert adv[4:] == [0.0, 0.0, 0.0]  # "b" constant, "c" a single play
    assert n_zero == 2


def test_group_advantages_uneven_values():
    adv, n_zero = group_advantages([0.0, 0.0, 0.0, 1.0], ["g"] * 4)
    std = math.sqrt(0.75 * 0.25)  # mean .25
    assert adv == pytest.approx([-0.25 / std] * 3 + [0.75 / std], rel=1e-5)
    assert n_zero == 0


# ---------------------------------------------------------------- loss: on-policy, aggregation


def test_on_policy_loss_is_minus_advantage_and_gradient_is_policy_gradient():
    now = _t([[0.0, -1.0, -2.0]], grad=True)
    beh = _t([[0.0, -1.0, -2.0]])
    loss, met = _loss(now, beh, _t([2.0]), _t([[0, 1, 1]]))
    assert loss.item() == pytest.approx(-2.0)
    loss.backward()
    # grpo: mean over the 2 trained tokens -> d/dlogp = -A / 2 on trained, 0 on masked
    assert now.grad[0].tolist() == pytest.approx([0.0, -1.0, -1.0])
    assert met["clip_fraction"] == 0.0
    assert met["ratio_mean"] == pytest.approx(1.0)
    assert met["tis_mean"] == pytest.approx(1.0)
    assert met["tokens"] == 2.0


@pytest.mark.parametrize(("agg", "expected"), [("grpo", 0.0), ("dapo", -1 / 3), ("dr_grpo", -1 / 8)])
def test_aggregation_modes(agg, expected):
    # seq 0: 2 trained tokens, A=+1 -> token loss -1 each; seq 1: 1 trained token, A=-1 -> +1
    now = _t([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]], grad=True)
    mask = _t([[0, 1, 1], [0, 0, 1]])
    loss, _ = _loss(now, now.detach().clone(), _t([1.0, -1.0]), mask, agg=agg, max_tokens=4)
    assert loss.item() == pytest.approx(expected)


@pytest.mark.parametrize("agg", ["grpo", "dapo", "dr_grpo"])
def test_micro_batches_sum_to_the_full_batch(agg):
    g = torch.Generator().manual_seed(0)
    now = (-torch.rand(4, 5, generator=g, dtype=torch.float64)).requires_grad_()
    beh = now.detach() + 0.1 * torch.randn(4, 5, generator=g, dtype=torch.float64)
    adv = _t([1.0, -0.5, 2.0, -1.5])
    mask = _t([[0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]])
    full, _ = _loss(now, beh, adv, mask, agg=agg, max_tokens=7)
    tot = {"total_sequences": 4, "total_tokens": int(mask.sum()), "max_tokens": 7}
    a, _ = _loss(now[:1], beh[:1], adv[:1], mask[:1], agg=agg, **tot)
    b, _ = _loss(now[1:], beh[1:], adv[1:], mask[1:], agg=agg, **tot)
    assert (a + b).item() == pytest.approx(full.item(), rel=1e-12)


# ---------------------------------------------------------------- clip (ratio against behaviour)


@pytest.mark.parametrize(
    ("ratio", "adv", "loss", "grad", "clipped"),
    [
        (1.5, 1.0, -1.28, 0.0, 1.0),  # above 1 + 0.28 with A > 0: clipped, no gradient
        (1.5, -1.0, 1.5, 1.5, 0.0),  # A < 0 keeps the unclipped (larger) loss: d/dlogp = -A*r
        (0.5, -1.0, 0.8, 0.0, 1.0),  # below 1 - 0.2 with A < 0: clipped
        (0.5, 1.0, -0.5, -0.5, 0.0),  # A > 0 and ratio < 1: unclipped
        (1.1, 1.0, -1.1, -1.1, 0.0),  # inside the range
    ],
)
def test_clip_against_behaviour(ratio, adv, loss, grad, clipped):
    beh = _t([[-2.0]])
    now = (beh + math.log(ratio)).detach().requires_grad_()
    out, met = _loss(now, beh, _t([adv]), _t([[1]]), logp_proximal=beh)
    assert out.item() == pytest.approx(loss)
    out.backward()
    assert now.grad.item() == pytest.approx(grad)
    assert met["clip_fraction"] == clipped
    assert met["tis_mean"] == pytest.approx(1.0)  # proximal == behaviour: no extra weight
    assert met["ratio_mean"] == pytest.approx(ratio)


def test_clip_against_a_proximal_policy_with_tis_on_top():
    beh = _t([[-2.0]])
    prox = beh + math.log(1.5)  # behaviour -> proximal: w = 1.5
    now = (prox + math.log(1.5)).detach().requires_grad_()  # proximal -> now: r = 1.5, clipped
    out, met = _loss(now, beh, _t([1.0]), _t([[1]]), logp_proximal=prox)
    assert out.item() == pytest.approx(-1.5 * 1.28)
    out.backward()
    assert now.grad.item() == pytest.approx(0.0)
    assert met["clip_fraction"] == 1.0
    assert met["tis_mean"] == pytest.approx(1.5)
    assert met["ratio_mean"] == pytest.approx(2.25)


# ---------------------------------------------------------------- TIS (default single-pass anchor)


@pytest.mark.parametrize(("ratio", "weight"), [(1.5, 1.5), (3.0, 2.0), (0.25, 0.25)])
def test_tis_weight_is_truncated_ratio_and_detached(ratio, weight):
    beh = _t([[-3.0]])
    now = (beh + math.log(ratio)).detach().requires_grad_()
    out, met = _loss(now, beh, _t([1.0]), _t([[1]]), tis_cap=2.0)
    assert out.item() == pytest.approx(-weight)  # r == 1 against the detached proximal
    out.backward()
    assert now.grad.item() == pytest.approx(-weight)  # w * A * grad log pi, w not differentiated
    assert met["tis_mean"] == pytest.approx(weight)
    assert met["clip_fraction"] == 0.0
    assert met["ratio_max"] == pytest.approx(ratio)


# ---------------------------------------------------------------- masks


def test_masked_positions_cannot_leak_inf_or_nan():
    now = _t([[0.0, -1.0, -1.0]], grad=True)
    beh = _t([[-1e4, -1.0, -1.0]])  # garbage where the mask is 0
    ref = _t([[1e4, -1.0, -1.0]])
    out, met = _loss(now, beh, _t([1.0]), _t([[0, 1, 1]]), ref_logp=ref, kl_coef=0.5, agg="dapo")
    assert out.item() == pytest.approx(-1.0)
    out.backward()
    assert torch.isfinite(now.grad).all()
    assert now.grad[0, 0].item() == 0.0
    assert met["kl"] == pytest.approx(0.0)
    assert met["ratio_max"] == pytest.approx(1.0)


def test_fully_masked_batch_gives_zero_loss():
    now = _t([[-1.0, -2.0]], grad=True)
    out, met = _loss(now, now.detach(), _t([1.0]), _t([[0, 0]]))
    assert out.item() == 0.0
    assert met["tokens"] == 0.0


# ---------------------------------------------------------------- KL


def test_k3_kl_value_and_gradient():
    now = _t([[-2.0, -2.0]], grad=True)
    ref = _t([[-2.0 + math.log(2.0), -2.0]])  # ref - now = ln 2 on token 0, 0 on token 1
    out, met = _loss(now, now.detach().clone(), _t([0.0]), _t([[1, 1]]), ref_logp=ref, kl_coef=0.1)
    k = 2.0 - math.log(2.0) - 1.0
    assert met["kl"] == pytest.approx(k / 2)
    assert out.item() == pytest.approx(0.1 * k / 2)  # grpo: mean over 2 tokens, A = 0
    out.backward()
    # d/dnow [e^(ref-now) - (ref-now) - 1] = 1 - e^(ref-now) = -1 on token 0, 0 on token 1
    assert now.grad[0].tolist() == pytest.approx([0.1 * -1.0 / 2, 0.0])


def test_kl_needs_reference():
    now = _t([[-1.0]])
    with pytest.raises(ValueError, match="ref_logp"):
        _loss(now, now, _t([1.0]), _t([[1]]), kl_coef=0.1)


def test_unknown_aggregation_is_rejected():
    now = _t([[-1.0]])
    with pytest.raises(ValueError, match="aggregation"):
        _loss(now, now, _t([1.0]), _t([[1]]), agg="mean")


# ---------------------------------------------------------------- selected logprobs


@pytest.mark.parametrize("chunk_rows", [1024, 3])
def test_selected_logprobs_match_full_log_softmax(chunk_rows):
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 50, bias=False)
    hidden = torch.randn(7, 8, requires_grad=True)
    targets = torch.randint(0, 50, (7,))
    temp = torch.tensor([0.7, 0.7, 0.7, 1.0, 1.0, 1.3, 1.3])
    got = selected_logprobs(hidden, head, targets, temp, chunk_rows=chunk_rows)
    ref = torch.log_softmax(head(hidden) / temp[:, None], -1).gather(-1, targets[:, None])[:, 0]
    assert torch.allclose(got, ref, atol=1e-5)
    (g1,) = torch.autograd.grad(got.sum(), hidden)
    (g2,) = torch.autograd.grad(ref.sum(), hidden)
    assert torch.allclose(g1, g2, atol=1e-5)
    scalar = selected_logprobs(hidden, head, targets, 2.0, chunk_rows=chunk_rows)
    ref2 = torch.log_softmax(head(hidden) / 2.0, -1).gather(-1, targets[:, None])[:, 0]
    assert torch.allclose(scalar, ref2, atol=1e-5)


# ---------------------------------------------------------------- designer weight


def _sample(role, n_prompt, n_trained, advantage):
    from spade_async.learner.samples import TrainSample

    n = n_prompt + n_trained
    return TrainSample(
        role=role,
        input_ids=list(range(1, n + 1)),
        loss_mask=[0] * n_prompt + [1] * n_trained,
        behaviour_logprobs=[0.0] * n_prompt + [-1.0] * n_trained,
        advantage=advantage,
        adapter_version=0,
    )


def _batch_loss(samples, agg):
    from spade_async.learner.batching import build_micro_batches

    total = 0.0
    batches = build_micro_batches(samples, 2, 10_000)
    weight = sum(mb.total_weight for mb in batches)
    for mb in batches:
        logp = mb.behaviour.clone().requires_grad_(True)
        loss, _ = grpo_loss(
            logp,
            mb.behaviour,
            mb.advantages,
            mb.mask,
            clip_low=0.2,
            clip_high=0.28,
            tis_cap=2.0,
            agg=agg,
            max_tokens=10_000,
            total_sequences=len(samples),
            total_tokens=weight,
            weights=mb.weights,
        )
        total += float(loss.detach())
    return total


@pytest.mark.parametrize("agg", ["grpo", "dapo", "dr_grpo"])
def test_designer_sample_weight_does_not_depend_on_its_length(agg):
    agents = [_sample("agent", 5, 20, 1.0), _sample("agent", 5, 40, -0.5)]
    short = _batch_loss([*agents, _sample("designer", 10, 10, 3.0)], agg)
    long = _batch_loss([*agents, _sample("designer", 10, 3000, 3.0)], agg)
    assert short == pytest.approx(long, rel=1e-5)
    # ... and it weighs as one typical agent sequence: swapping it for an agent sample of the
    # agents' mean length (30 tokens) with the same advantage gives the same loss.
    as_agent = _batch_loss([*agents, _sample("agent", 10, 30, 3.0)], agg)
    assert long == pytest.approx(as_agent, rel=1e-5)
    # Without the weights (every token weighing 1), the length leaks into dapo and dr_grpo.
    if agg != "grpo":
        from spade_async.learner.batching import build_micro_batches

        mbs = build_micro_batches([*agents, _sample("designer", 10, 3000, 3.0)], 8, 10_000)
        flat, _ = grpo_loss(
            mbs[0].behaviour.clone(),
            mbs[0].behaviour,
            mbs[0].advantages,
            mbs[0].mask,
            clip_low=0.2,
            clip_high=0.28,
            tis_cap=2.0,
            agg=agg,
            max_tokens=10_000,
        )
        assert float(flat) != pytest.approx(long, rel=1e-3)
