"""The machine's own limits, measured in the same run as the figure they bound.

Why same-run: a shared 2-core CPU's speed moves with its load and its model (AVX2 only,
AVX-512 BF16, AMX), so a learner's FLOP/s means something only beside the matmul rate the
same cores reached minutes before, and a decode rate only beside the memory bandwidth they
had. ``matmul_peak`` times a square matmul in the dtype asked for (the rate a well-shaped
GEMM reaches: the learner's MFU denominator); ``memory_bandwidth`` times a large tensor
copy (bytes read + written per second: the decode-bound MBU denominator).

Why more than one number (issue 54): on the same 2-core AMD EPYC the best-of-5 square bf16
peak read 670-727 GFLOP/s in some runs and 402-422 in others, so an MFU divided by one
such reading moved by 1.7x with nothing changed in the learner. ``measure`` therefore takes
interleaved rounds (every probe once per round, the order reversed every other round, so a
burst of load from another process hits all of them alike) and reports each as a
:class:`Spread` (median, quartiles, min-max): a figure is quoted against the median, and the
spread says how far to trust it. Besides the square ``2048^3`` GEMM it times the model's
own GEMMs (:class:`ModelShape`, SmolLM2-135M by default), which a 135M model cannot fill the
way a square 2048 matrix does:

- ``learner_gemms(tokens, trained)``: per decoder layer the q/k/v/o/gate/up/down products at
  ``M = tokens`` (the padded tokens of one micro-batch, e.g. 16 x 108), each forward and its
  input gradient, plus the lm_head at ``M = trained`` positions (forward and input gradient);
  the FLOP-weighted rate of that set is the learner's model-shape peak. The frozen base gets
  no weight gradient; LoRA products are small and left out (as ``learner.step_flops`` counts
  them only as FLOPs).
- ``decode_pass(batch)``: one decode step's linears at ``M = batch`` over 30 layers of
  distinct weights (plus the lm_head), so the weights stream from memory as in a real
  decode: its rate in tokens/s (``batch`` / pass time) is what the model's GEMMs allow a
  decoder at that batch, a tighter bound than ``batch x bandwidth / weight bytes``. It is
  plain ``x @ w.T``: the engine's oneDNN-packed weights (``engine.cpu_prepack``) can beat
  it at small batches, so a share above 1 there means the packing pays, not a broken bound.

``python benchmarks/limits.py [--dtypes float32,bfloat16] [--tokens 1728] [--trained 768]
[--batches 1,16] [--rounds 5] [--threads 2] [--device cpu] [--json PATH]`` prints every
limit with its spread.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from results import cpu_brief, cpu_model  # benchmarks/ is on sys.path: the scripts run as files

from spade_async.hardware.cpu import bf16_flags, cpu_flags

SQUARE_N = 2048
MIN_TIMED_S = 0.002
"""A probe repeats a small GEMM until one timing is at least this long (timer resolution, jitter)."""


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_peak(dtype: torch.dtype, n: int = SQUARE_N, repeats: int = 5, device: str = "cpu") -> float:
    """FLOP/s of an ``n x n @ n x n`` matmul in ``dtype``: the best of ``repeats`` after a warm-up."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    a @ b  # warm-up: thread pool, packing buffers
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def memory_bandwidth(mib: int = 512, repeats: int = 5) -> float:
    """Bytes per second of a ``mib``-MiB tensor copy (read + write), median of ``repeats``."""
    src = torch.ones(mib * 2**20 // 4, dtype=torch.float32)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t0)
    return 2 * src.numel() * 4 / statistics.median(times)


# -- spreads ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """Rounds of one measurement: median, quartiles, min and max."""

    median: float
    q1: float
    q3: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        xs = sorted(values)
        if not xs:
            raise ValueError("a spread of no values")
        if len(xs) == 1:
            q1 = q3 = xs[0]
        else:
            q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        return cls(statistics.median(xs), q1, q3, xs[0], xs[-1], len(xs))

    @property
    def rel_iqr(self) -> float:
        """The interquartile range over the median (0: every round alike)."""
        return (self.q3 - self.q1) / self.median if self.median else math.nan

    def describe(self, scale: float = 1e9, unit: str = "GFLOP/s", digits: int = 1) -> str:
        """``"412.3 GFLOP/s (IQR 401.0-420.5, min-max 380.2-425.0, 5 rounds)"``."""

        def f(x: float) -> str:
            return f"{x / scale:.{digits}f}"

        return (
            f"{f(self.median)} {unit} (IQR {f(self.q1)}-{f(self.q3)}, "
            f"min-max {f(self.lo)}-{f(self.hi)}, {self.n} rounds)"
        )


# -- the model's GEMM shapes --------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """A Llama-style decoder's linear shapes (defaults: SmolLM2-135M's ``config.json``)."""

    hidden: int = 576
    intermediate: int = 1536
    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    layers: int = 30
    vocab: int = 49152

    @classmethod
    def from_config(cls, model_dir: str | Path | None) -> ModelShape:
        """The shape in ``model_dir/config.json`` (the defaults where it is missing or unreadable)."""
        if model_dir is None:
            return cls()
        try:
            c = json.loads((Path(model_dir) / "config.json").read_text())
        except (OSError, ValueError):
            return cls()
        heads = int(c.get("num_attention_heads", cls.heads))
        hidden = int(c.get("hidden_size", cls.hidden))
        return cls(
            hidden=hidden,
            intermediate=int(c.get("intermediate_size", cls.intermediate)),
            heads=heads,
            kv_heads=int(c.get("num_key_value_heads", heads)),
            head_dim=int(c.get("head_dim") or hidden // heads),
            layers=int(c.get("num_hidden_layers", cls.layers)),
            vocab=int(c.get("vocab_size", cls.vocab)),
        )

    def layer_linears(self) -> list[tuple[int, int]]:
        """``(in, out)`` of one decoder layer's q, k, v, o, gate, up, down projections."""
        h, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]

    def weight_params(self) -> int:
        """Parameters the decoder's linears and the lm_head hold (what a decode step reads)."""
        return self.layers * sum(k * n for k, n in self.layer_linears()) + self.hidden * self.vocab


@dataclass(frozen=True)
class Gemm:
    """``count`` products ``(m x k) @ (k x n)`` per step."""

    m: int
    k: int
    n: int
    count: int = 1

    @property
    def flops(self) -> int:
        return 2 * self.m * self.k * self.n * self.count


def merge(gemms: Iterable[Gemm]) -> list[Gemm]:
    """The same products with equal shapes merged (their counts added), in first-seen order."""
    out: dict[tuple[int, int, int], int] = {}
    for g in gemms:
        out[(g.m, g.k, g.n)] = out.get((g.m, g.k, g.n), 0) + g.count
    return [Gemm(m, k, n, c) for (m, k, n), c in out.items()]


def learner_gemms(shape: ModelShape, tokens: int, trained: int) -> list[Gemm]:
    """One micro-batch's base-model GEMMs in a learner step (module docstring): each linear's
    forward at ``M = tokens`` and its input gradient, the lm_head's at ``M = trained``."""
    gemms = []
    for k, n in shape.layer_linears():
        gemms.append(Gemm(tokens, k, n, shape.layers))  # forward
        gemms.append(Gemm(tokens, n, k, shape.layers))  # input gradient
    if trained > 0:
        gemms.append(Gemm(trained, shape.hidden, shape.vocab))
        gemms.append(Gemm(trained, shape.vocab, shape.hidden))
    return merge(gemms)


def decode_gemms(shape: ModelShape, batch: int) -> list[Gemm]:
    """One decode step's GEMMs at ``M = batch`` (each layer's linears, then the lm_head)."""
    gemms = [Gemm(batch, k, n, shape.layers) for k, n in shape.layer_linears()]
    return [*gemms, Gemm(batch, shape.hidden, shape.vocab)]


def flops_of(gemms: Sequence[Gemm]) -> int:
    return sum(g.flops for g in gemms)


# -- probes: one round of one measurement -------------------------------------------------

Probe = Callable[[], float]
"""One timed round; returns the rate (work per second)."""


def _timed(fn: Callable[[], object], device: str) -> float:
    _sync(device)
    t0 = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - t0


def _reps(fn: Callable[[], object], device: str) -> int:
    """Repeats that make one timing at least ``MIN_TIMED_S`` (after a warm-up call)."""
    fn()
    once = max(_timed(fn, device), 1e-7)
    return max(1, math.ceil(MIN_TIMED_S / once))


def square_probe(dtype: torch.dtype, n: int = SQUARE_N, device: str = "cpu") -> Probe:
    """FLOP/s of one ``n x n @ n x n`` matmul (warmed up when the probe is made)."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    a @ b

    def run() -> float:
        return 2 * n**3 / _timed(lambda: a @ b, device)

    return run


def gemm_set_probe(gemms: Sequence[Gemm], dtype: torch.dtype, device: str = "cpu") -> Probe:
    """FLOP-weighted FLOP/s of a set of GEMMs: each distinct shape timed (repeated up to
    ``MIN_TIMED_S``), the step's time as ``sum(count x time)``. Operands are reused, so they
    sit in cache: right for the compute-bound learner shapes, not for decode (``decode_probe``)."""
    work = []
    for g in gemms:
        a = torch.randn(g.m, g.k, device=device).to(dtype)
        b = torch.randn(g.k, g.n, device=device).to(dtype)

        def one(a: torch.Tensor = a, b: torch.Tensor = b) -> object:
            return a @ b

        work.append((g, one, _reps(one, device)))

    def run() -> float:
        seconds = 0.0
        for g, one, reps in work:

            def many(one: Callable[[], object] = one, reps: int = reps) -> None:
                for _ in range(reps):
                    one()

            seconds += g.count * _timed(many, device) / reps
        return flops_of(gemms) / seconds

    return run


def decode_weights(shape: ModelShape, dtype: torch.dtype, device: str = "cpu") -> list[torch.Tensor]:
    """Distinct ``(out, in)`` weights of every layer's linears, then the lm_head's (as a model holds them)."""
    ws = [torch.randn(n, k, device=device).to(dtype) for _ in range(shape.layers) for k, n in shape.layer_linears()]
    return [*ws, torch.randn(shape.vocab, shape.hidden, device=device).to(dtype)]


def decode_probe(weights: Sequence[torch.Tensor], batch: int, device: str = "cpu") -> Probe:
    """Tokens/s one decode step's GEMMs allow at ``batch`` rows: ``x @ w.T`` (as ``nn.Linear``)
    over every weight of ``decode_weights`` in turn, so they stream from memory as in the
    model; ``batch / pass seconds``."""
    x = {int(w.shape[1]): torch.randn(batch, int(w.shape[1]), device=device).to(w.dtype) for w in weights}

    def one_pass() -> None:
        for w in weights:
            x[int(w.shape[1])] @ w.T

    one_pass()

    def run() -> float:
        return batch / _timed(one_pass, device)

    return run


def bandwidth_probe(mib: int = 512) -> Probe:
    """Bytes per second of one ``mib``-MiB tensor copy (read + write)."""
    src = torch.ones(mib * 2**20 // 4, dtype=torch.float32)
    dst = torch.empty_like(src)
    dst.copy_(src)

    def run() -> float:
        return 2 * src.numel() * 4 / _timed(lambda: dst.copy_(src), "cpu")

    return run


def interleaved(probes: dict[str, Probe], rounds: int) -> dict[str, Spread]:
    """Every probe once per round, the order reversed every other round; a spread each."""
    values: dict[str, list[float]] = {name: [] for name in probes}
    for r in range(rounds):
        order = list(probes) if r % 2 == 0 else list(reversed(probes))
        for name in order:
            values[name].append(probes[name]())
    return {name: Spread.of(v) for name, v in values.items()}


# -- what the benchmarks divide by --------------------------------------------------------


@dataclass
class Limits:
    """Same-run limits with their spreads; keys are the names ``measure`` gives its probes."""

    spreads: dict[str, Spread]
    shape: ModelShape

    def square(self, dtype: str) -> Spread:
        return self.spreads[f"square-{dtype}"]

    def learner(self, dtype: str) -> Spread:
        return self.spreads[f"learner-{dtype}"]

    def decode(self, dtype: str, batch: int) -> Spread:
        return self.spreads[f"decode-{dtype}-b{batch}"]

    @property
    def bandwidth(self) -> Spread:
        return self.spreads["bandwidth"]

    def as_json(self) -> dict[str, Any]:
        return {"shape": asdict(self.shape), "spreads": {k: asdict(v) for k, v in self.spreads.items()}}


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name)
    assert isinstance(dtype, torch.dtype), name
    return dtype


def measure(
    dtypes: Sequence[str],
    *,
    shape: ModelShape | None = None,
    learner: tuple[int, int] | None = None,
    decode_batches: Sequence[int] = (),
    bandwidth: bool = False,
    rounds: int = 5,
    device: str = "cpu",
) -> Limits:
    """The square peak per dtype, and as asked: the learner's model-shape peak at ``learner =
    (tokens, trained)`` of one micro-batch, the decode GEMM bound at each of ``decode_batches``,
    the copy bandwidth; all in the same interleaved rounds."""
    shape = shape or ModelShape()
    probes: dict[str, Probe] = {}
    for name in dtypes:
        dt = dtype_of(name)
        probes[f"square-{name}"] = square_probe(dt, device=device)
        if learner is not None:
            probes[f"learner-{name}"] = gemm_set_probe(learner_gemms(shape, *learner), dt, device=device)
        weights = decode_weights(shape, dt, device=device) if decode_batches else []
        for b in decode_batches:
            probes[f"decode-{name}-b{b}"] = decode_probe(weights, b, device=device)
    if bandwidth:  # host memory, whatever the device (as ``memory_bandwidth``)
        probes["bandwidth"] = bandwidth_probe()
    return Limits(interleaved(probes, rounds), shape)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def cpu_line() -> str:
    """The CPU, its widest SIMD, its bf16 flags and the load average, on one line."""
    flags = cpu_flags()
    simd = "avx512f" if "avx512f" in flags else ("avx2" if "avx2" in flags else "no avx2")
    load = " ".join(_read("/proc/loadavg").split()[:3]) or "?"
    bf16 = ",".join(bf16_flags()) or "no bf16 instructions"
    return f"cpu: {cpu_model()}, {torch.get_num_threads()} threads, {simd}, {bf16}; load average {load}"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--tokens", type=int, default=16 * 108, help="padded tokens of one learner micro-batch")
    ap.add_argument("--trained", type=int, default=16 * 48, help="trained positions of that micro-batch")
    ap.add_argument("--batches", default="1,16", help="decode batch sizes")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", default=None, help="a model folder whose config.json gives the shape (SmolLM2-135M)")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(cpu_line())
    dtypes = [d for d in args.dtypes.split(",") if d]
    batches = [int(b) for b in args.batches.split(",") if b]
    lim = measure(
        dtypes,
        shape=ModelShape.from_config(args.model),
        learner=(args.tokens, args.trained),
        decode_batches=batches,
        bandwidth=True,
        rounds=args.rounds,
        device=args.device,
    )
    for dt in dtypes:
        print(f"{dt:9s} square {SQUARE_N}^3 matmul    {lim.square(dt).describe()}")
        print(f"{dt:9s} learner GEMMs M={args.tokens:<6d} {lim.learner(dt).describe()}")
        for b in batches:
            print(f"{dt:9s} decode GEMMs batch {b:<4d} {lim.decode(dt, b).describe(1.0, 'tok/s')}")
    print(f"{'':9s} copy bandwidth            {lim.bandwidth.describe(1e9, 'GB/s')}")
    print(cpu_line())
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_brief(), **lim.as_json()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
