"""Designer admission on the embedded model: admitted fraction (95% Wilson interval) per setting.

What it measures, for each setting, over ``--designs`` designs (half fresh, half mutation,
skills in rotation, corpus documents drawn in order, the run's designer prompts and sampling):

- admitted designs, the fraction and its 95% Wilson interval;
- where the others stopped (the admission stage of ``selfplay.design.progress``);
- completion tokens and seconds per design and per admitted design;
- completions the loop check stopped (``finish_reason = "loop"``) and the tokens that saved,
  counted as ``max_new_tokens`` minus what they generated (a loop runs to the limit otherwise;
  seconds saved from the same run's decode rate);
- for admitted designs, the similarity (``difflib`` ratio) to the nearest library file, so a
  warm start that only re-emits library files with new constants shows as such (1.0 = a
  copy; the copy rule still rejects exact copies of memory, not near-copies).

Settings: ``base`` (the embedded model, today's prompts), ``warm`` (the warm start of the
config: shipped with the package, or trained first, or read from its cache), ``adapter=PATH``
(any saved adapter, e.g. a run's ``adapters/vN``: what the run's training did to the designer). Designs are
validated in the real sandbox, and the run's copy rules apply: a design that is, up to comments
and layout, the code shown in its prompt or a file of the warm-start library is not admitted,
nor one more alike than ``selfplay.max_library_similarity`` to a shipped file (a near-copy).

Every setting is asked the same prompts in the same order, so each setting after the first is
also compared with the first prompt by prompt: both admitted, only one, neither, and the exact
McNemar p on the prompts where they differ (``warm,adapter=RUN/adapters/vN``: has the run's
training changed what the designer writes on the same prompts?).

``--part held_out``: every prompt shows a file of the library's held-out families (as the
example of a fresh design or the parent of a mutation), and the similarity of an admitted
design is measured against the training part of the library only: can the warm-started
designer write games of mechanics it never trained on, and how far are they from what it did?

Usage: ``python benchmarks/designs.py [--config tiny_designer] [--designs 64]
[--settings base,warm] [--part all|held_out] [--loop-ngram 32] [--out FILE.md]``
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from designer_paired import mcnemar_p  # benchmarks/ is on sys.path: the scripts run as files
from scipy.stats import binomtest

from spade_async.config import Config, load_config
from spade_async.config.presets import resolve_config
from spade_async.engine.base import Engine, Sampling
from spade_async.engine.embedded import resolve_model_path
from spade_async.engine.factory import build_engine
from spade_async.engine.loops import LOOP
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.run.assemble import build_learner, preflight
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.design.designer import Design, DesignJob, design_environment
from spade_async.selfplay.design.novelty import code_key
from spade_async.selfplay.design.progress import N_STAGES, STAGES
from spade_async.selfplay.design.similarity import nearest, shipped_files
from spade_async.selfplay.generation import reject_copies, reject_near_copies
from spade_async.selfplay.prompts import MUTATIONS
from spade_async.warmstart.library import LibraryEnv, load_library, split_library
from spade_async.warmstart.train import ADAPTER, cached_folder, read_result, run_warm_start, shipped_folder


@dataclass
class Tally:
    setting: str
    designs: list[Design] = field(default_factory=list)
    seconds: float = 0.0
    similarity: list[float] = field(default_factory=list)
    similarity_shipped: list[float] = field(default_factory=list)
    """With ``--part held_out``: the same designs' nearest among every shipped file (the parent
    or example shown in the prompt included)."""
    near_copies: int = 0
    """Designs that passed admission and were rejected as near-copies of a shipped file."""
    by_prompt: dict[int, bool] = field(default_factory=dict)
    """Admitted or not, by the prompt's place in the job list: every setting asks the same prompts
    in the same order, so two settings compare prompt by prompt (``paired``)."""

    @property
    def admitted(self) -> int:
        return sum(d.admitted for d in self.designs)


def jobs(
    n: int, library: list[LibraryEnv], corpus: Corpus, rng: random.Random, origin: str = "both"
) -> list[DesignJob]:
    """``n`` jobs cycling over the skills: alternately fresh and mutation (``origin = "both"``),
    or only one kind."""
    skills = sorted({e.skill for e in library})
    out = []
    for i in range(n):
        skill = skills[i % len(skills)]
        same = [e for e in library if e.skill == skill] or library
        shown = EnvRecord(code=rng.choice(same).code, domain="games", skill=skill, origin="seed", created_step=0)
        if origin == "mutation" or (origin == "both" and i % 2):
            out.append(DesignJob(skill, corpus.next(), "mutation", parent=shown, change=rng.choice(MUTATIONS)))
        else:
            out.append(DesignJob(skill, corpus.next(), "fresh", examples=[Example(shown, "model")]))
    return out


async def measure(
    setting: str,
    engine: Engine,
    cfg: Config,
    library: list[LibraryEnv],
    n: int,
    part: str = "all",
    origin: str = "both",
) -> Tally:
    """``n`` designs from prompts that show files of ``library`` (``part``: all of it, or only its
    held-out families, similarity then measured against its training part)."""
    corpus = Corpus.from_config(cfg.corpus, seed=cfg.run.seed)
    train, held = split_library(library, cfg.warmstart.held_out)
    library_keys = frozenset(code_key(e.code) for e in library)
    shown_from = held if part == "held_out" else library
    compare = tuple((e.name, e.code) for e in train) if part == "held_out" else shipped_files(cfg.selfplay.domain)
    todo = jobs(n, shown_from, corpus, random.Random(cfg.run.seed), origin)
    tally = Tally(setting)
    designer = Sampling.from_config(cfg.engine.designer)
    hint = Sampling.from_config(cfg.engine.hint)
    t0 = time.perf_counter()
    async with await SandboxPool.start(cfg.sandbox) as pool:

        async def one(i: int, job: DesignJob) -> None:
            d = await design_environment(
                engine,
                pool,
                job,
                designer_sampling=designer,
                hint_sampling=hint,
                max_turns=cfg.selfplay.max_turns,
                repair_turns=cfg.selfplay.repair_turns,  # tiny: 0 (first attempts only)
                separate_hint_call=cfg.selfplay.separate_hint_call,
                max_model_len=engine.max_model_len,
                rng=random.Random(i),
            )
            tally.near_copies += apply_copy_rules(
                d, library_keys, cfg.selfplay.max_library_similarity, cfg.selfplay.domain
            )
            tally.designs.append(d)
            tally.by_prompt[i] = d.admitted
            if d.admitted and d.code:
                near = d.nearest if part == "all" else nearest(d.code, compare)  # "all": compare is every shipped file
                tally.similarity.append(near.ratio if near else 0.0)
                if part == "held_out":
                    tally.similarity_shipped.append(d.nearest.ratio if d.nearest else 0.0)
            print(
                f"  [{setting}] {len(tally.designs)}/{n} prompt {i} {job.skill[:12]:12s} {job.origin:8s} admitted={d.admitted} "
                f"tokens={len(d.completion.token_ids)} {d.completion.finish_reason} {(d.reasons or [''])[0][:60]}",
                flush=True,
            )

        async with anyio.create_task_group() as tg:
            for i, job in enumerate(todo):
                tg.start_soon(one, i, job)
    tally.seconds = time.perf_counter() - t0
    return tally


def paired(a: Tally, b: Tally) -> str:
    """``b`` against ``a`` on the same prompts: how many both, only one, or neither admitted,
    and the exact McNemar p on the prompts where they differ (does ``b`` write differently, not
    only draw other prompts?)."""
    both = only_a = only_b = neither = 0
    for i in sorted(a.by_prompt.keys() & b.by_prompt.keys()):
        x, y = a.by_prompt[i], b.by_prompt[i]
        both += x and y
        only_a += x and not y
        only_b += y and not x
        neither += not (x or y)
    return (
        f"{b.setting} against {a.setting}, prompt by prompt: both admitted {both}, only {a.setting} {only_a}, "
        f"only {b.setting} {only_b}, neither {neither}; McNemar p {mcnemar_p(only_a, only_b):.3f}"
    )


def apply_copy_rules(d: Design, library_keys: frozenset[str], limit: float, domain: str) -> bool:
    """The run's copy rules on one design (``selfplay.generation``): not admitted when its code is
    the code its prompt showed or a library file (``reject_copies``), nor when it is more alike than
    ``limit`` to its nearest shipped file (``reject_near_copies``). True when it was rejected as
    a near-copy."""
    reject_copies([d], set(), library_keys)
    if not (d.admitted and d.code):
        return False
    d.nearest = nearest(d.code, shipped_files(domain))
    reject_near_copies([d], limit)
    return not d.admitted


def warm_adapter(cfg: Config, model_path: str) -> Path:
    shipped = shipped_folder(cfg)
    if shipped is not None:
        return shipped / ADAPTER
    folder = cached_folder(cfg)
    if read_result(folder) is None:
        placement = preflight(cfg)
        engine = build_engine(cfg, model_path, placement)
        learner = build_learner(cfg, model_path, placement)
        print(run_warm_start(cfg, engine=engine, learner=learner, out=folder, report=print).describe(), flush=True)
        anyio.run(engine.aclose)
    return folder / ADAPTER


def row(t: Tally, max_new: int) -> str:
    n, k = len(t.designs), t.admitted
    ci = binomtest(k, n).proportion_ci(method="wilson") if n else None
    tokens = [len(d.completion.token_ids) for d in t.designs]
    loops = [d for d in t.designs if d.completion.finish_reason == LOOP]
    saved = sum(max_new - len(d.completion.token_ids) for d in loops)
    rate = sum(tokens) / t.seconds if t.seconds else 0.0
    per_admitted = f"{t.seconds / k:.0f} s, {sum(tokens) / k:.0f} tok" if k else "none admitted"
    sim = (
        f"{statistics.median(t.similarity):.3f} (min {min(t.similarity):.3f}, max {max(t.similarity):.3f})"
        if t.similarity
        else "-"
    )
    interval = f"[{ci.low:.2f}, {ci.high:.2f}]" if ci else "-"
    return (
        f"| {t.setting} | {k}/{n} = {k / n:.2f} {interval} | {statistics.mean(tokens):.0f} | "
        f"{t.seconds / n:.1f} | {per_admitted} | {len(loops)} ({saved} tok, ~{saved / rate if rate else 0:.0f} s) | {sim} |"
    )


def stages(t: Tally) -> str:
    counts = Counter(min(d.first_stage, N_STAGES) for d in t.designs)
    names = [*STAGES, "passed"]
    near = f" ({t.near_copies} of them near-copies, not admitted)" if t.near_copies else ""
    return f"{t.setting}: " + ", ".join(f"{names[s]}: {counts[s]}" for s in sorted(counts)) + near


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="tiny_designer")
    ap.add_argument("--designs", type=int, default=64)
    ap.add_argument("--settings", default="base,warm")
    ap.add_argument("--part", choices=("all", "held_out"), default="all", help="which library files prompts show")
    ap.add_argument("--loop-ngram", type=int, default=None, help="override engine.designer.loop_ngram (0: off)")
    ap.add_argument("--origin", choices=("both", "fresh", "mutation"), default="both", help="which designs to ask for")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. engine.designer.temperature=0.3",
    )
    ap.add_argument("--out", type=Path, default=None, help="also write the table (markdown) here")
    args = ap.parse_args()
    overrides = [*([] if args.loop_ngram is None else [f"engine.designer.loop_ngram={args.loop_ngram}"]), *args.set]
    cfg = load_config(resolve_config(args.config), overrides)
    model_path = resolve_model_path(cfg.model.name)
    library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
    tallies = []
    for setting in args.settings.split(","):
        engine = build_engine(cfg, model_path, preflight(cfg))
        if setting == "warm":
            anyio.run(engine.load_adapter, 1, str(warm_adapter(cfg, model_path)))
        elif setting.startswith("adapter="):  # e.g. a run's adapters/vN: has the run changed the designer?
            anyio.run(engine.load_adapter, 1, setting.removeprefix("adapter="))
        elif setting != "base":
            raise SystemExit(f"unknown setting {setting!r}; choose from base, warm, adapter=PATH")
        tallies.append(anyio.run(measure, setting, engine, cfg, library, args.designs, args.part, args.origin))
        anyio.run(engine.aclose)
    max_new = cfg.engine.designer.max_new_tokens
    lines = [
        f"Designs ({args.origin}) on {cfg.model.name}, config {args.config}{' ' + ' '.join(args.set) if args.set else ''}, prompts from library part {args.part!r} "
        f"(similarity against {'its training part' if args.part == 'held_out' else 'every shipped file'}), "
        f"{args.designs} per setting, designer T "
        f"{cfg.engine.designer.temperature}, max_new_tokens {max_new}, loop check {cfg.engine.designer.loop_ngram}"
        f"; {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}",
        "",
        "| setting | admitted (95% Wilson) | tokens / design | s / design | per admitted design | loop-stopped (saved) | similarity to nearest library file, median (min, max) |",
        "|---|---|---|---|---|---|---|",
        *(row(t, max_new) for t in tallies),
        "",
        *("- " + stages(t) for t in tallies),
        *(
            f"- {t.setting}: similarity of the same admitted designs to every shipped file (the held-out "
            f"file shown in the prompt included): median {statistics.median(t.similarity_shipped):.3f} "
            f"(min {min(t.similarity_shipped):.3f}, max {max(t.similarity_shipped):.3f})"
            for t in tallies
            if t.similarity_shipped
        ),
        *("- " + paired(tallies[0], t) for t in tallies[1:]),
    ]
    print("\n".join(lines))
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
