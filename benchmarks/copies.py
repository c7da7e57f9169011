"""How often does a designer copy? Exact copies, near-copies and new code, per designer.

Why: the designer is rewarded for new environments (docs/rewards.md). Exact copies (up to
comments and layout, ``selfplay.novelty``) of memory or of the code shown in the prompt are
scored as invalid; near-copies are not. This measures how often each kind occurs, for the
scripted test designers and for a real model, on the prompts a run builds: the config's
``mutation_fraction`` decides mutation (parent shown) or fresh (``examples_shown`` memory
examples shown); memory is the config's seed library, given a mid-band win rate so that it
is shown as examples the way played environments are.

Classes, against the code shown in the prompt and every memory environment:
``exact`` (same ``code_key``), ``duplicate`` (of an earlier design of the same generation), ``near`` (difflib ratio >= ``--near`` on the normalised code,
not exact), ``new``, and ``no code`` (no code block parsed). No code is run: admission in the
sandbox is a separate question.

Usage: ``python benchmarks/copies.py [--config configs/tiny.toml] [--designer embedded|scripted|variants]
[--designs 8] [--generations 1] [--mutation-fraction F] [--threads 2] [--near 0.9] [--max-new-tokens N]``
"""

from __future__ import annotations

import argparse
import difflib
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from spade_async.config import load_config
from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.envs.seeds import load_seeds
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import select_examples
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.design.designer import DesignJob, fit_design_prompt, prompt_budget
from spade_async.selfplay.design.novelty import code_key, normalised
from spade_async.selfplay.design.parsing import parse_designer
from spade_async.selfplay.prompts import pick_mutation
from spade_async.testing import COIN_ENV, ScriptedEngine

ROOT = Path(__file__).resolve().parents[1]


def classify(code: str | None, shown: list[str], memory: list[str], near: float) -> tuple[str, float]:
    """(class, best similarity to shown or memory code)."""
    if not code:
        return "no code", 0.0
    key = code_key(code)
    others = shown + memory
    if any(code_key(o) == key for o in others):
        return "exact", 1.0
    mine = normalised(code)
    best = max(
        (difflib.SequenceMatcher(None, mine, normalised(o), autojunk=False).ratio() for o in others), default=0.0
    )
    return ("near" if best >= near else "new"), best


def build_engine(kind: str, cfg_path: Path, threads: int) -> Any:
    if kind == "scripted":  # the default test designer: the coin game, verbatim, every time
        return ScriptedEngine()
    if kind == "variants":  # the pipeline test's designer now: the coin game with a new description each time
        counter = iter(range(1, 10**9))
        return ScriptedEngine(
            policies={
                "designer": lambda p, r: (
                    "```python\n"
                    + COIN_ENV.replace(
                        "Call a weighted coin flip.", f"Call a weighted coin flip (variant {next(counter)})."
                    )
                    + "```"
                )
            }
        )
    import torch

    from spade_async.engine.embedded import model_dir
    from spade_async.engine.hf import HFEngine

    torch.set_num_threads(threads)
    cfg = load_config(cfg_path)
    return HFEngine(
        model_dir(), batch_size=cfg.engine.batch_size, max_model_len=cfg.engine.max_model_len, seed=cfg.run.seed
    )


async def main(args: argparse.Namespace) -> None:
    cfg = load_config(args.config)
    sp = cfg.selfplay
    if args.mutation_fraction is not None:
        sp = sp.model_copy(update={"mutation_fraction": args.mutation_fraction})
    seeds = load_seeds(cfg.memory.seed_tier, domain=sp.domain)
    memory = [
        EnvRecord(
            code=s.source,
            domain=sp.domain,
            skill=s.skill,
            origin="seed",
            created_step=0,
            hint=s.hint,
            win_rate=0.5,
            n_plays=8,
        )
        for s in seeds
    ]
    engine = build_engine(args.designer, args.config, args.threads)
    rng = random.Random(cfg.run.seed)
    corpus = Corpus.from_config(cfg.corpus, seed=cfg.run.seed)
    sampling = Sampling.from_config(cfg.engine.designer)
    if args.max_new_tokens or args.designer != "embedded":  # scripted tokens are characters
        sampling = replace(sampling, max_new_tokens=args.max_new_tokens or 4096)
    counts: dict[str, int] = {}
    tokens, elapsed = 0, 0.0
    for generation in range(args.generations):
        jobs = []
        for i in range(args.designs):
            skill = sp.skills[i % len(sp.skills)]
            parent = (
                rng.choice([m for m in memory if m.skill == skill] or memory)
                if rng.random() < sp.mutation_fraction
                else None
            )
            examples = (
                []
                if parent
                else select_examples(
                    memory, cfg.memory.examples_shown, skill=skill, low=sp.plateau_low, high=sp.plateau_high, rng=rng
                )
            )
            job = DesignJob(
                skill,
                corpus.next(),
                "mutation" if parent else "fresh",
                parent=parent,
                examples=examples,
                change=pick_mutation(rng, sp.domain) if parent else "",
                domain=sp.domain,
            )
            ids, job = fit_design_prompt(engine, job, prompt_budget(getattr(engine, "max_model_len", None), sampling))
            jobs.append((job, ids))
        start = time.perf_counter()
        completions = await engine.generate([GenerationRequest(ids, sampling, role="designer") for _, ids in jobs])
        elapsed += time.perf_counter() - start
        tokens += sum(len(c.token_ids) for c in completions)
        admitted: list[EnvRecord] = []
        for (job, _), completion in zip(jobs, completions, strict=True):
            parsed = parse_designer(completion.text)
            code = parsed.code if parsed.ok else None
            shown = [e.env.code for e in job.examples] + ([job.parent.code] if job.parent else [])
            kind, best = classify(code, shown, [m.code for m in memory], args.near)
            if kind != "exact" and code and code_key(code) in {code_key(a.code) for a in admitted}:
                kind, best = "duplicate", 1.0  # of an earlier design of this generation
            counts[kind] = counts.get(kind, 0) + 1
            print(
                f"gen {generation} {job.origin:8s} {job.skill:24s} {kind:8s} best similarity {best:.2f}  "
                f"({len(completion.token_ids)} tokens)"
            )
            if code and kind not in ("exact", "duplicate"):  # as if admitted: later generations see it in memory
                admitted.append(
                    EnvRecord(
                        code=code,
                        domain=sp.domain,
                        skill=job.skill,
                        origin=job.origin,
                        created_step=generation + 1,
                        win_rate=0.5,
                        n_plays=8,
                    )
                )
        memory = admitted + memory
    total = args.designs * args.generations
    print(
        f"\ndesigner={args.designer} designs={total} ({args.generations} generations) "
        + " ".join(f"{k}={v} ({v / total:.0%})" for k, v in sorted(counts.items()))
        + f"  ({tokens} tokens in {elapsed:.0f}s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "tiny.toml")
    parser.add_argument("--designer", choices=["embedded", "scripted", "variants"], default="embedded")
    parser.add_argument("--designs", type=int, default=8, help="designs per generation")
    parser.add_argument("--generations", type=int, default=1, help="each adds its non-copies to memory")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--near", type=float, default=0.9)
    parser.add_argument("--mutation-fraction", type=float, default=None, help="override selfplay.mutation_fraction")
    parser.add_argument("--max-new-tokens", type=int, default=0, help="override engine.designer.max_new_tokens")
    anyio.run(main, parser.parse_args())
