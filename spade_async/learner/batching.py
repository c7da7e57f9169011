"""Turn ``TrainSample`` records into padded, length-sorted micro-batches.

Why length-sorted padding rather than packing: sorting the step's samples by length before
cutting them into micro-batches leaves little padding, and it works with every attention
implementation (packed sequences need position-id-aware masks, which not every model and
attention backend honour). Tokens after a sample's last trained token are cut off: a causal
model's predictions for earlier positions do not depend on them, so they cost compute for
nothing (an agent transcript often ends with an environment observation).

Token weights: an agent token weighs 1. A designer sample's tokens share one fixed weight,
the mean trained-token count of the agent samples in the same optimizer batch (1 when there
are none), spread evenly over its own tokens. So a designer sample weighs as much as one
typical agent sequence whatever its own length, under every loss aggregation: the designer
reward's scale ``min(n_agent_samples / n_envs * k, cap)`` assumes exactly that, and without
it a 3,000-token design would weigh 3,000 agent tokens under the token-mean (``dapo``) loss.

Why a token budget beside the row count (``learner.micro_batch_tokens``): a fixed row count
sized for the longest sequences leaves short ones in small matmuls. On a CPU, 16 rows of 108
tokens in micro-batches of 4 ran the GRPO step at 172 GFLOP/s, in one micro-batch at 222
(SmolLM2-135M, bf16, ``benchmarks/learner.py``). With a budget, a micro-batch takes rows,
longest first, while rows x its longest row stays within the budget (and within
``micro_batch`` rows), so peak memory is set by the budget, not by the row count.

Deviations: a sample is cut from the right at ``max_seq_len``; a trained token at position 0
has no position that predicts it and is ignored; a sample left with no trained token is
dropped (counted by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from spade_async.learner.samples import TrainSample


@dataclass
class MicroBatch:
    """Right-padded tensors of one forward pass; ``mask[b, t] = 1`` where token t is trained."""

    input_ids: Tensor  # (B, T) long
    attention_mask: Tensor  # (B, T) long
    mask: Tensor  # (B, T) float, 0 at position 0 and on padding
    behaviour: Tensor  # (B, T) float32 behaviour logprobs (0 where mask is 0)
    weights: Tensor  # (B, T) float32 loss weight per token (0 where mask is 0; see the module docstring)
    advantages: Tensor  # (B,) float32
    temperature: Tensor  # (B,) float32
    n_tokens: int  # real (unpadded) tokens in the batch
    n_trained: int  # trained tokens in the batch
    total_weight: float = 0.0  # sum of ``weights`` in the batch
    versions: Tensor | None = None  # (B,) long: adapter version that generated each row's tokens


def sequence_weight(samples: list[TrainSample], max_seq_len: int) -> float:
    """Weight of one designer sample in token units: the mean trained-token count of the agent samples."""
    lengths = [sum(trim(s, max_seq_len)[1]) for s in samples if s.role != "designer"]
    lengths = [n for n in lengths if n > 0]
    return sum(lengths) / len(lengths) if lengths else 1.0


def trim(sample: TrainSample, max_seq_len: int) -> tuple[list[int], list[int], list[float]]:
    """Cut at ``max_seq_len`` and after the last trained token; position 0 is never trained."""
    ids = sample.input_ids[:max_seq_len]
    mask = list(sample.loss_mask[:max_seq_len])
    logps = sample.behaviour_logprobs[:max_seq_len]
    if mask:
        mask[0] = 0
    last = max((i for i, m in enumerate(mask) if m), default=-1)
    end = last + 1
    return ids[:end], mask[:end], logps[:end]


def build_micro_batches(
    samples: list[TrainSample],
    micro_batch: int,
    max_seq_len: int,
    pad_id: int = 0,
    max_tokens: int | None = None,
) -> list[MicroBatch]:
    """Trim, drop samples with no trained token, sort by length, pad, cut into micro-batches of
    at most ``micro_batch`` rows and, when ``max_tokens`` is given, at most that many padded
    tokens (a row longer than the budget gets a micro-batch of its own)."""
    designer_weight = sequence_weight(samples, max_seq_len)
    rows = []
    for s in samples:
        ids, row_mask, logps = trim(s, max_seq_len)
        if any(row_mask):
            per_token = designer_weight / sum(row_mask) if s.role == "designer" else 1.0
            rows.append((ids, row_mask, logps, s.advantage, s.temperature, per_token, s.adapter_version))
    rows.sort(key=lambda r: len(r[0]), reverse=True)
    batches = []
    for start, stop in _cuts([len(r[0]) for r in rows], micro_batch, max_tokens):
        chunk = rows[start:stop]
        width = len(chunk[0][0])  # sorted longest first
        b = len(chunk)
        input_ids = torch.full((b, width), pad_id, dtype=torch.long)
        attn = torch.zeros((b, width), dtype=torch.long)
        mask = torch.zeros((b, width), dtype=torch.float32)
        behaviour = torch.zeros((b, width), dtype=torch.float32)
        weights = torch.zeros((b, width), dtype=torch.float32)
        for i, (ids, m, lp, _, _, per_token, _) in enumerate(chunk):
            n = len(ids)
            input_ids[i, :n] = torch.tensor(ids, dtype=torch.long)
            attn[i, :n] = 1
            mask[i, :n] = torch.tensor(m, dtype=torch.float32)
            behaviour[i, :n] = torch.tensor(lp, dtype=torch.float32) * mask[i, :n]
            weights[i, :n] = mask[i, :n] * per_token
        batches.append(
            MicroBatch(
                input_ids=input_ids,
                attention_mask=attn,
                mask=mask,
                behaviour=behaviour,
                weights=weights,
                advantages=torch.tensor([r[3] for r in chunk], dtype=torch.float32),
                temperature=torch.tensor([r[4] for r in chunk], dtype=torch.float32),
                n_tokens=int(attn.sum()),
                n_trained=int(mask.sum()),
                total_weight=float(weights.sum()),
                versions=torch.tensor([r[6] for r in chunk], dtype=torch.long),
            )
        )
    return batches


def _cuts(lengths: list[int], max_rows: int, max_tokens: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` row ranges over ``lengths`` (sorted longest first): each range holds at
    most ``max_rows`` rows and, with a budget, at most ``max_tokens`` padded tokens (rows x the
    range's first, longest row), or one row."""
    cuts = []
    start = 0
    while start < len(lengths):
        rows = max_rows if max_tokens is None else max(1, min(max_rows, max_tokens // lengths[start]))
        cuts.append((start, min(start + rows, len(lengths))))
        start += rows
    return cuts
