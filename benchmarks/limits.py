"""The machine's own limits, measured in the same run as the figure they bound.

Why same-run: a shared 2-core CPU's speed moves with its load and its model (AVX2 only,
AVX-512 BF16, AMX), so a learner's FLOP/s means something only beside the matmul rate the
same cores reached minutes before, and a decode rate only beside the memory bandwidth they
had. ``matmul_peak`` times a square matmul in the dtype asked for (the rate a well-shaped
GEMM reaches: the learner's MFU denominator); ``memory_bandwidth`` times a large tensor
copy (bytes read + written per second: the decode-bound MBU denominator).
"""

from __future__ import annotations

import platform
import statistics
import time
from pathlib import Path

import torch

from spade_async.hardware.cpu import bf16_flags, cpu_flags


def matmul_peak(dtype: torch.dtype, n: int = 2048, repeats: int = 5, device: str = "cpu") -> float:
    """FLOP/s of an ``n x n @ n x n`` matmul in ``dtype``: the best of ``repeats`` after a warm-up."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    a @ b  # warm-up: thread pool, packing buffers
    best = float("inf")
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if device.startswith("cuda"):
            torch.cuda.synchronize()
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


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def cpu_line() -> str:
    """The CPU, its widest SIMD, its bf16 flags and the load average, on one line."""
    names = [
        line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines() if line.startswith("model name")
    ]
    model = names[0] if names else (platform.processor() or "?")
    flags = cpu_flags()
    simd = "avx512f" if "avx512f" in flags else ("avx2" if "avx2" in flags else "no avx2")
    load = " ".join(_read("/proc/loadavg").split()[:3]) or "?"
    bf16 = ",".join(bf16_flags()) or "no bf16 instructions"
    return f"cpu: {model}, {torch.get_num_threads()} threads, {simd}, {bf16}; load average {load}"
