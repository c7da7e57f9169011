"""GRPO math: group advantages, the clipped token-level objective with TIS and KL, and
log-probabilities computed only at the positions that are trained on. Pure torch.

Choices (and where they deviate from a textbook GRPO):

- **Agent advantages** (``group_advantages``): per GRPO group (one environment's G plain
  plays), ``(r - mean) / (std + eps)`` with the *population* std (ddof 0, as in the SPADE
  reference; TRL uses ddof 1, which only rescales). A group whose std is below ``eps``
  (all plays won, all lost, or a single play) carries no signal: its advantages are 0.0 and it
  is counted, so the caller can report the share of dead groups; the trainer then drops those
  samples (no compute spent on zero gradients) unless a KL term still needs them.
- **Designer advantages**: the designer reward from ``rewards.designer_rewards`` (raw reward
  centred per skill, *no* std division, times ``min(n_agent_samples / n_envs * k, cap)``)
  is the advantage as is; the learner does not renormalise it (no second centring here).
- **Ratio anchor (decoupled PPO).** The per-token objective is
  ``-w * min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)`` with
  ``r = pi_now / pi_prox`` and the truncated importance weight
  ``w = min(pi_prox / pi_behaviour, tis_cap)`` (detached). ``pi_behaviour`` is the engine's
  logprob at sampling time (no recompute pass). ``pi_prox`` (the "proximal" policy) is what
  the trust region is measured against:

  * default (``logp_proximal=None``): the current parameters, detached, i.e. the policy at
    the start of this optimizer step (all micro-batches of a step share parameters). Then
    ``r == 1`` in value, the gradient is ``w * A * grad log pi`` (the truncated-IS policy
    gradient) and ``w = min(pi_now / pi_behaviour, tis_cap)`` exactly as in docs/rewards.md.
    For later PPO epochs the trainer passes the epoch-0 logprobs as ``logp_proximal`` and
    the clip becomes active.
  * ``logp_proximal = logp_behaviour``: classic PPO against the behaviour policy; then
    ``w == 1`` and the ratio itself carries the importance correction. A one-step-stale
    sample has ``r != 1`` and the clip bounds it.

  Deviation from "ratio against behaviour *and* TIS weight ``min(pi_now/pi_behaviour, C)``":
  multiplying both in would apply the importance correction twice (gradient
  ``r^2 * A * grad log pi`` instead of ``r * A * grad log pi``). The decoupled form (Hilton et
  al. 2021, "Batch size-invariance for policy optimization"; AReaL) keeps exactly one
  correction in either setting. TIS is applied to every sample: for on-policy ones
  ``w ~ 1`` (sampler/learner numerical mismatch only), for stale designer samples it is the
  off-policy correction. ``tis_cap`` truncates, it does not drop (the gradient through a
  capped token is ``cap * A * grad log pi``).
- **KL** (``kl_coef > 0``): the k3 estimator ``exp(ref - now) - (ref - now) - 1`` per trained
  token (unbiased, non-negative; DeepSeekMath), added to the token loss and *not* weighted by
  ``w``. The reference is the base model with the LoRA adapter disabled (the trainer runs it
  under ``torch.no_grad``; no second model in memory).
- **Aggregation** (``agg``), written so that summing the losses of micro-batches gives the
  loss of the whole optimizer batch (pass ``total_sequences`` / ``total_tokens``), over
  per-token ``weights`` (default: the mask; the trainer gives a designer sample's tokens a
  weight that sums to a length-independent constant, see ``learner.batching``):
  ``grpo``: weighted mean over each sequence's trained tokens, then mean over sequences;
  ``dapo``: weighted sum over all trained tokens / total weight (token-level mean);
  ``dr_grpo``: weighted sum over all trained tokens / (total sequences * ``max_tokens``), a
  constant normaliser with no length bias (Dr. GRPO).
- **Temperature**: logits are divided by the sampling temperature before the softmax, so
  ``logp_now`` is comparable with the engine's (tempered) behaviour logprobs.
- **Selected logprobs only** (``selected_logprobs``): the lm_head and the log-normaliser are
  evaluated only at the hidden states that predict trained tokens, in row chunks; when there
  is more than one chunk and a gradient is needed, each chunk is recomputed in backward
  (``torch.utils.checkpoint``) so the ``rows x vocab`` logits never all live at once.
  ``logsumexp`` is used instead of a full ``log_softmax`` (one fewer ``rows x vocab`` tensor).
- Masked positions may hold anything (0.0, padding): their log-ratios are zeroed before
  ``exp`` so no inf/NaN can leak into the loss through ``0 * inf``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

LOSS_AGGREGATIONS = ("grpo", "dr_grpo", "dapo")


def group_advantages(rewards: Sequence[float], groups: Sequence[str], eps: float = 1e-6) -> tuple[list[float], int]:
    """Group-normalised advantages ``(r - mean) / (std + eps)``; zero-variance groups get 0.0.

    Returns ``(advantages, n_zero_variance_groups)``; advantages are in input order.
    """
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards but {len(groups)} group keys")
    members: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    advantages = [0.0] * len(rewards)
    n_zero = 0
    for idx in members.values():
        vals = [float(rewards[i]) for i in idx]
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
        if std < eps:
            n_zero += 1
            continue
        for i, v in zip(idx, vals, strict=True):
            advantages[i] = (v - mean) / (std + eps)
    return advantages, n_zero


def grpo_loss(
    logp_now: Tensor,
    logp_behaviour: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    clip_low: float,
    clip_high: float,
    tis_cap: float,
    agg: str,
    ref_logp: Tensor | None = None,
    kl_coef: float = 0.0,
    max_tokens: int | None = None,
    logp_proximal: Tensor | None = None,
    total_sequences: int | None = None,
    total_tokens: float | None = None,
    weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """Clipped, TIS-weighted GRPO loss (see the module docstring for every choice).

    Shapes: ``logp_*``, ``mask``, ``ref_logp``: ``(B, T)``; ``advantages``: ``(B,)``.
    ``clip_low`` / ``clip_high`` are the epsilons (the ratio is clipped to
    ``[1 - clip_low, 1 + clip_high]``). ``total_sequences`` / ``total_tokens`` are the
    optimizer batch's counts when this call sees one micro-batch of it (default: this call's);
    with ``weights`` (``(B, T)``, zero off the mask), ``total_tokens`` is the batch's total weight.
    ``max_tokens`` is the ``dr_grpo`` constant (default: ``T``).

    Returns ``(loss, metrics)``; metrics are means over this call's trained tokens (``kl``,
    ``clip_fraction``, ``ratio_mean`` = mean ``pi_now / pi_behaviour``, ``tis_mean``), the
    maximum ``ratio_max`` and the count ``tokens``.
    """
    if agg not in LOSS_AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {agg!r}; choose from {LOSS_AGGREGATIONS}")
    if kl_coef > 0 and ref_logp is None:
        raise ValueError("kl_coef > 0 needs ref_logp")
    m = mask.to(logp_now.dtype)
    on = mask.bool()
    zero = torch.zeros_like(logp_now)
    behaviour = logp_behaviour.to(logp_now.dtype)
    prox = logp_now.detach() if logp_proximal is None else logp_proximal.to(logp_now.dtype).detach()

    ratio = torch.exp(torch.where(on, logp_now - prox, zero))
    tis = torch.exp(torch.where(on, prox - behaviour, zero)).clamp(max=tis_cap).detach()
    adv = advantages.to(logp_now.dtype).unsqueeze(-1)
    surr = torch.minimum(ratio * adv, ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * adv)
    token_loss = -tis * surr

    kl = zero
    if ref_logp is not None:
        delta = torch.where(on, ref_logp.to(logp_now.dtype) - logp_now, zero)
        kl = torch.exp(delta) - delta - 1.0
        if kl_coef > 0:
            token_loss = token_loss + kl_coef * kl

    w_tok = m if weights is None else weights.to(logp_now.dtype) * m
    seq_tokens = w_tok.sum(-1)
    n_seq = total_sequences if total_sequences is not None else logp_now.shape[0]
    n_tok = total_tokens if total_tokens is not None else float(seq_tokens.sum().item())
    const = max_tokens if max_tokens is not None else logp_now.shape[-1]
    loss = _aggregate(token_loss * w_tok, seq_tokens, agg, n_seq=n_seq, n_tok=n_tok, max_tokens=const)
    with torch.no_grad():
        behaviour_ratio = torch.exp(torch.where(on, logp_now.detach() - behaviour, zero))
        clipped = ((ratio > 1.0 + clip_high) & (adv > 0)) | ((ratio < 1.0 - clip_low) & (adv < 0))
        metrics = _metrics(m, on, kl=kl, clipped=clipped, behaviour_ratio=behaviour_ratio, tis=tis)
    return loss, metrics


def _aggregate(masked: Tensor, seq_tokens: Tensor, agg: str, *, n_seq: int, n_tok: float, max_tokens: int) -> Tensor:
    """The batch loss from the weighted per-token losses ``masked`` (B, T): ``grpo`` means each
    sequence's tokens then the sequences; ``dapo`` divides by the batch's tokens; ``dr_grpo``
    by sequences times the constant ``max_tokens``."""
    if agg == "grpo":
        return (masked.sum(-1) / seq_tokens.clamp(min=1e-12)).sum() / max(n_seq, 1)
    if agg == "dapo":
        return masked.sum() / (n_tok if n_tok > 0 else 1.0)
    return masked.sum() / (max(n_seq, 1) * max(max_tokens, 1))


def _metrics(
    m: Tensor, on: Tensor, *, kl: Tensor, clipped: Tensor, behaviour_ratio: Tensor, tis: Tensor
) -> dict[str, float]:
    """Means over the trained tokens (``m``: the mask as floats; ``on``: as booleans)."""
    count = float(m.sum().item())
    denom = max(count, 1.0)
    return {
        "kl": float((kl.detach() * m).sum().item() / denom),
        "clip_fraction": float((clipped.to(m.dtype) * m).sum().item() / denom),
        "ratio_mean": float((behaviour_ratio * m).sum().item() / denom),
        "ratio_max": float(behaviour_ratio[on].max().item()) if count > 0 else 1.0,
        "tis_mean": float((tis * m).sum().item() / denom),
        "tokens": count,
    }


def _chunk_logprobs(hidden: Tensor, targets: Tensor, inv_temp: Tensor, lm_head: Callable[[Tensor], Tensor]) -> Tensor:
    logits = lm_head(hidden).float() * inv_temp.unsqueeze(-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def selected_logprobs(
    hidden: Tensor,
    lm_head: Callable[[Tensor], Tensor],
    targets: Tensor,
    temperature: float | Tensor = 1.0,
    *,
    chunk_rows: int = 1024,
) -> Tensor:
    """Log-probabilities of ``targets`` from already selected hidden states.

    ``hidden``: ``(N, H)``, the final hidden states at the positions that *predict* each
    target (position ``i - 1`` for token ``i``); ``targets``: ``(N,)``; ``temperature``: a
    float or a per-row ``(N,)`` tensor. Returns ``(N,)`` float32 logprobs of the tempered
    distribution. Only ``N x vocab`` logits are formed, ``chunk_rows`` rows at a time.
    """
    n = hidden.shape[0]
    if isinstance(temperature, Tensor):
        inv_temp = (1.0 / temperature.to(hidden.device, torch.float32)).expand(n)
    else:
        inv_temp = torch.full((n,), 1.0 / float(temperature), device=hidden.device)
    if n <= chunk_rows:
        return _chunk_logprobs(hidden, targets, inv_temp, lm_head)
    recompute = torch.is_grad_enabled() and hidden.requires_grad
    out = []
    for start in range(0, n, chunk_rows):
        sl = slice(start, start + chunk_rows)
        if recompute:
            out.append(
                checkpoint(
                    _chunk_logprobs,
                    hidden[sl],
                    targets[sl],
                    inv_temp[sl],
                    lm_head,
                    use_reentrant=False,
                )
            )
        else:
            out.append(_chunk_logprobs(hidden[sl], targets[sl], inv_temp[sl], lm_head))
    return torch.cat(out)
