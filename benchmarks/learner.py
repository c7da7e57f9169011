"""Learner throughput: one GRPO step against a bare forward+backward over the same tokens.

Why this comparison: the GRPO step should cost what the model costs, not what the loss
costs. Three measurements in one process, same model, same LoRA, same micro-batches,
interleaved round by round (so a noisy shared CPU hits all of them alike), median of rounds
(and the ratio of the best rounds, which other processes on a shared CPU disturb least):

- ``grpo``: ``Trainer.train_step`` (``kl_coef = 0``): decoder, lm_head at trained positions
  only, GRPO loss, backward, grad clip, AdamW step.
- ``bare``: decoder + lm_head at the same trained positions + cross-entropy, backward. The
  floor for any policy-gradient loss. Target: ``grpo / bare >= 0.9`` in tokens/s.
- ``hf_full``: the usual ``model(input_ids, labels=...)`` step, full-vocabulary logits at
  every position (what a naive learner pays).

Peak memory: CUDA ``max_memory_allocated`` per measurement; on CPU the growth of the
process peak RSS over the RSS after loading, measured after the first (GRPO) step, before
the other two ever ran (ru_maxrss only grows, so theirs are cumulative).

Against the machine (``benchmarks/limits.py``): for each ``--dtypes`` entry (the base
model's dtype; the LoRA, Adam and log-softmax are float32 in every case) the GRPO step's
achieved FLOP/s beside two same-run peaks in that dtype, each the median of ``--peak-rounds``
interleaved rounds with its spread: a square 2048^3 matmul (MFU, the ``_mfu`` figure) and
the model's own GEMMs at the step's first micro-batch shape (M = its padded tokens; the
lm_head at its trained positions: ``limits.learner_gemms``), ``_mfu_model_shape``: the
share of what this model's shapes allow, which a 135M model's narrow GEMMs keep well
under the square peak. FLOPs are counted as
``step_flops`` states: per token, 4 x the decoder's linear weights (forward 2N and the input
gradient 2N: the frozen base gets no weight gradient) and 6 x the LoRA weights; per trained
token, 4 x the lm_head (the lm_head runs at trained positions only); causal attention
3 x 2 L H T^2 per sequence. Embedding lookups, norms and activations are not counted.

Micro-batches: by default the CPU preset's (``configs/tiny.toml``, what ``make run`` trains
with): at most ``learner.micro_batch`` rows and ``learner.micro_batch_tokens`` padded tokens
each; ``--micro-batch`` and ``--micro-batch-tokens`` (0: no budget) override them.

Usage: ``python benchmarks/learner.py [--model embedded|PATH] [--batch 16] [--prompt 60]
[--completion 48] [--micro-batch N] [--micro-batch-tokens N] [--rounds 3] [--threads 2]
[--device cpu] [--dtypes float32,bfloat16] [--peak-rounds 5] [--json PATH]``; ``--json`` also writes the headline figures for the README's table (``make bench``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import limits  # benchmarks/ is on sys.path: the scripts run as files
import torch
from limits import cpu_line
from results import Recorder

from spade_async.config import EMBEDDED_MODEL, LearnerConfig, ModelConfig, load_config
from spade_async.config.presets import presets_dir
from spade_async.engine.embedded import resolve_model_path
from spade_async.learner.batching import MicroBatch
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer


def make_samples(n: int, prompt: int, completion: int, vocab: int, seed: int) -> list[TrainSample]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        ids = torch.randint(10, vocab, (prompt + completion,), generator=g).tolist()
        mask = [0] * prompt + [1] * completion
        logps = [-2.0 * m for m in mask]
        adv = 1.0 if i % 2 else -1.0
        out.append(TrainSample("agent", ids, mask, logps, adv, 0))
    return out


def samples_like(shapes: list[tuple[str, int, int]], vocab: int, seed: int) -> list[TrainSample]:
    """Random-token samples of the given ``(role, length, trained tokens)`` (trained tokens at the
    end, advantages alternating +-1): a recorded step's shapes without its text."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, (role, length, trained) in enumerate(shapes):
        trained = max(1, min(trained, length - 1))
        ids = torch.randint(10, vocab, (length,), generator=g).tolist()
        mask = [0] * (length - trained) + [1] * trained
        out.append(
            TrainSample(
                "designer" if role == "designer" else "agent",
                ids,
                mask,
                [-2.0 * m for m in mask],
                1.0 if i % 2 else -1.0,
                0,
            )
        )
    return out


def make_trainer(
    path: str, dtype: str, micro_batch: int, micro_batch_tokens: int | None, device: str = "cpu"
) -> Trainer:
    """The learner as this benchmark measures it (``kl_coef = 0``, lr 1e-5)."""
    cfg = LearnerConfig(lr=1e-5, micro_batch=micro_batch, micro_batch_tokens=micro_batch_tokens or None, kl_coef=0.0)
    return Trainer(path, ModelConfig.model_validate({"dtype": dtype}), cfg, device=device, seed=0)


def time_grpo(trainer: Trainer, samples: list[TrainSample], rounds: int, warmup: bool = True) -> list[float]:
    """Seconds of ``rounds`` GRPO steps on ``samples`` (after one untimed step when ``warmup``)."""
    cuda = trainer.device.startswith("cuda")
    times = []
    for i in range(rounds + int(warmup)):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        trainer.train_step(samples)
        if cuda:
            torch.cuda.synchronize()
        if i >= int(warmup):
            times.append(time.perf_counter() - t0)
    return times


def forward_tokens(trainer: Trainer, samples: list[TrainSample]) -> int:
    """Non-padding tokens a GRPO step on ``samples`` runs forward (what the trainer's ``tokens_per_s`` counts)."""
    kept = [s for s in samples if s.advantage != 0.0]
    return sum(mb.n_tokens for mb in micro_batches(trainer, kept))


def peaks_against(
    trainer: Trainer, samples: list[TrainSample], dtype: str, rounds: int, device: str = "cpu"
) -> tuple[limits.Spread, limits.Spread]:
    """Same-run square and model-shape peaks for ``dtype`` (FLOP/s spreads), the model shape
    at the first micro-batch of a step on ``samples``."""
    mb = micro_batches(trainer, samples)[0]
    inner: Any = trainer.model.get_base_model()
    c: Any = inner.config
    shape = limits.ModelShape(
        hidden=int(c.hidden_size),
        intermediate=int(c.intermediate_size),
        heads=int(c.num_attention_heads),
        kv_heads=int(getattr(c, "num_key_value_heads", None) or c.num_attention_heads),
        head_dim=int(getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads),
        layers=int(c.num_hidden_layers),
        vocab=int(c.vocab_size),
    )
    lim = limits.measure(
        [dtype], shape=shape, learner=(int(mb.input_ids.numel()), mb.n_trained), rounds=rounds, device=device
    )
    return lim.square(dtype), lim.learner(dtype)


def micro_batches(trainer: Trainer, samples: list[TrainSample]) -> list[MicroBatch]:
    """The micro-batches ``Trainer.train_step`` cuts (same rows, same budget, same padding)."""
    return trainer._micro_batches(samples, trainer.cfg.max_seq_len)


def bare_step(trainer: Trainer, samples: list[TrainSample]) -> None:
    """Forward + backward with the same selection of positions, plain cross-entropy."""
    trainer.optimizer.zero_grad(set_to_none=True)
    n = sum(s.n_trained_tokens for s in samples)
    for mb in micro_batches(trainer, samples):
        lp = trainer._logprobs(mb, trainer._hidden(mb))
        (-(lp * mb.mask.to(lp.device)).sum() / n).backward()
    trainer.optimizer.zero_grad(set_to_none=True)


def hf_full_step(trainer: Trainer, samples: list[TrainSample]) -> None:
    """The usual causal-LM step: logits over the whole vocabulary at every position."""
    trainer.optimizer.zero_grad(set_to_none=True)
    for mb in micro_batches(trainer, samples):
        labels = mb.input_ids.masked_fill(mb.mask == 0, -100).to(trainer.device)
        out = trainer.model(
            input_ids=mb.input_ids.to(trainer.device),
            attention_mask=mb.attention_mask.to(trainer.device),
            labels=labels,
        )
        out.loss.backward()
    trainer.optimizer.zero_grad(set_to_none=True)


def step_flops(trainer: Trainer, samples: list[TrainSample]) -> float:
    """FLOPs of one GRPO step over ``samples`` as the module docstring counts them."""
    base_linear = lora = 0
    inner: Any = trainer.model.get_base_model()
    for name, module in inner.get_decoder().named_modules():
        if isinstance(module, torch.nn.Linear):
            if "lora_" in name:
                lora += module.weight.numel()
            else:
                base_linear += module.weight.numel()
    config: Any = inner.config
    hidden, layers, vocab = int(config.hidden_size), int(config.num_hidden_layers), int(config.vocab_size)
    tokens = sum(len(s.input_ids) for s in samples)
    trained = sum(s.n_trained_tokens for s in samples)
    attention = sum(3 * 2 * layers * hidden * len(s.input_ids) ** 2 for s in samples)
    return float(tokens * (4 * base_linear + 6 * lora) + trained * 4 * hidden * vocab + attention)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=60)
    ap.add_argument("--completion", type=int, default=48)
    preset = load_config(presets_dir() / "tiny.toml").learner
    ap.add_argument("--micro-batch", type=int, default=preset.micro_batch, help="rows (default: configs/tiny.toml's)")
    ap.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=preset.micro_batch_tokens or 0,
        help="padded tokens per micro-batch, 0 for no budget (default: configs/tiny.toml's)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="base-model dtypes to measure, each with its MFU")
    ap.add_argument("--peak-rounds", type=int, default=5, help="interleaved rounds of the same-run peaks")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures here (benchmarks/results.py)")
    args = ap.parse_args()
    rec = Recorder("learner", args.json, {k: v for k, v in vars(args).items() if k != "json"})
    torch.set_num_threads(args.threads)
    path = resolve_model_path(EMBEDDED_MODEL if args.model == "embedded" else args.model)
    print(cpu_line())
    for dtype in [d for d in args.dtypes.split(",") if d]:
        measure_dtype(args, path, dtype, rec)
    rec.write()


def measure_dtype(args: argparse.Namespace, path: str, dtype: str, rec: Recorder) -> None:
    trainer = make_trainer(path, dtype, args.micro_batch, args.micro_batch_tokens, args.device)
    base: Any = trainer.model.get_base_model()
    vocab = int(base.config.vocab_size)
    samples = make_samples(args.batch, args.prompt, args.completion, vocab, seed=0)
    tokens = sum(len(s.input_ids) for s in samples)
    cuda = args.device.startswith("cuda")
    rss0 = _rss_mib()

    def timed(fn: Callable[[], object]) -> tuple[float, float]:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else _rss_mib() - rss0
        return time.perf_counter() - t0, peak

    runs = {
        "grpo": lambda: trainer.train_step(samples),
        "bare": lambda: bare_step(trainer, samples),
        "hf_full": lambda: hf_full_step(trainer, samples),
    }
    peaks: dict[str, float] = {}
    for name, fn in runs.items():  # warm-up (allocator, kernels); grpo first for the CPU RSS peak
        _, peaks[name] = timed(fn)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            dt, peak = timed(fn)
            times[name].append(dt)
            if cuda:
                peaks[name] = max(peaks[name], peak)
    print(
        f"model={path} dtype={dtype} device={args.device} threads={args.threads} "
        f"batch={args.batch}x{args.prompt + args.completion} tokens={tokens} "
        f"trained={args.batch * args.completion} micro_batch={args.micro_batch} "
        f"micro_batch_tokens={args.micro_batch_tokens or None} micro_batches={len(micro_batches(trainer, samples))} "
        f"rounds={args.rounds}"
    )
    tps = {k: tokens / statistics.median(v) for k, v in times.items()}
    for name in runs:
        if cuda:
            mem = f"peak {peaks[name]:8.1f} MiB allocated"
        else:  # ru_maxrss only grows: only the first measured (grpo) is its own
            mem = f"peak RSS +{peaks[name]:7.1f} MiB" + (" (cumulative)" if name != "grpo" else "")
        print(
            f"  {name:8s} median {statistics.median(times[name]):7.3f} s  "
            f"min {min(times[name]):7.3f} s  {tps[name]:8.1f} tok/s  {mem}"
        )
    print(f"  ratio grpo/bare tokens/s = {tps['grpo'] / tps['bare']:.3f}  (target >= 0.9)")
    best = min(times["bare"]) / min(times["grpo"])  # interference only adds time: min is robust
    print(f"  ratio grpo/bare tokens/s, best rounds = {best:.3f}")
    print(f"  ratio grpo/hf_full tokens/s = {tps['grpo'] / tps['hf_full']:.3f}")
    flops = step_flops(trainer, samples)
    achieved = flops / statistics.median(times["grpo"])
    square, model = peaks_against(trainer, samples, dtype, args.peak_rounds, args.device)
    print(
        f"  grpo {flops / 1e9:.1f} GFLOP per step: {achieved / 1e9:.1f} GFLOP/s; same-run {dtype} peaks, "
        f"median of interleaved rounds:\n"
        f"    square 2048^3 matmul  {square.describe()}: MFU {achieved / square.median:.3f} "
        f"({achieved / square.hi:.3f}-{achieved / square.lo:.3f} over the peak's min-max)\n"
        f"    model-shape GEMMs     {model.describe()}: MFU {achieved / model.median:.3f} "
        f"({achieved / model.hi:.3f}-{achieved / model.lo:.3f})"
    )
    rec.add(
        **{
            f"{dtype}_grpo_tok_s": tps["grpo"],
            f"{dtype}_grpo_over_bare": tps["grpo"] / tps["bare"],
            f"{dtype}_grpo_over_bare_best": best,
            f"{dtype}_grpo_over_hf_full": tps["grpo"] / tps["hf_full"],
            f"{dtype}_mfu": achieved / square.median,
            f"{dtype}_mfu_model_shape": achieved / model.median,
            f"{dtype}_peak_square_gflop_s": square.median / 1e9,
            f"{dtype}_peak_model_shape_gflop_s": model.median / 1e9,
        }
    )


if __name__ == "__main__":
    main()
