"""Run a warm start: pairs from the library, supervised steps, the adapter and its manifest.

Why a result folder with a manifest: the run starts from ``adapter/`` and records
``warmstart.json`` (library, settings, losses) beside it in the run folder, so what the run
started from is inspectable; the same key (model, LoRA shape, library contents, settings, seed
and the code and prompts that render the pairs) reuses a previous result instead of training
again (``warm_start_key``): from the user's cache, or from the results shipped inside the
package (``shipped/KEY``: the main job's warm start, trained once by ``spade-async warmstart
tiny --ship`` and checked by a test that recomputes its key, so a changed library, template or
pair rule makes the shipped adapter stale and the test fails).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.engine.embedded import cache_root
from spade_async.hardware.device import dtype_name, resolve_device
from spade_async.learner.samples import TrainSample
from spade_async.selfplay.design.corpus import Corpus
from spade_async.warmstart.library import LibraryEnv, library_fingerprint, load_library, split_library
from spade_async.warmstart.pairs import design_pair

MANIFEST = "warmstart.json"
ADAPTER = "adapter"
FORMAT_VERSION = 2
SHIPPED = "shipped"
"""Folder of this package that holds shipped results, one ``KEY/`` each."""
_RENDERING = ("library", "pairs", "siblings", "variants", "train")
"""This package's modules whose code decides the pairs (and so the adapter): part of the key."""
_TEMPLATES = ("designer_fresh", "designer_mutation", "contract", "example")


class SupervisedLearner(Protocol):
    """What a warm start needs of the learner (``learner.trainer.Trainer`` satisfies it)."""

    version: int

    def supervised_step(
        self, samples: list[TrainSample], max_seq_len: int | None = None, lr: float | None = None
    ) -> dict[str, float]: ...

    def sft_loss(self, samples: list[TrainSample], max_seq_len: int | None = None) -> float: ...

    def save_adapter(self, path: str | Path) -> None: ...


@dataclass
class WarmStartResult:
    """What a warm start did (written as ``warmstart.json``)."""

    key: str
    library: str
    train: list[str]
    held_out: list[str]
    steps: int
    pairs: int
    losses: list[float] = field(default_factory=list)
    held_out_loss_before: float | None = None
    held_out_loss_after: float | None = None
    held_out_by_family: dict[str, list[float]] = field(default_factory=dict)
    """Held-out family -> [loss before, loss after] (one fresh and one mutation pair each)."""
    dtype: str = ""
    """The dtype it was trained in (not part of the key: a bf16 result serves a float32 run)."""
    train_families: int = 0
    held_out_families: list[str] = field(default_factory=list)
    seconds: float = 0.0
    format_version: int = FORMAT_VERSION

    def describe(self) -> str:
        held = (
            f"; held-out loss {self.held_out_loss_before:.3f} -> {self.held_out_loss_after:.3f}"
            if self.held_out_loss_before is not None and self.held_out_loss_after is not None
            else ""
        )
        last = f"{self.losses[-1]:.3f}" if self.losses else "n/a"
        return (
            f"warm start: {self.steps} steps on {len(self.train)} library files "
            f"({self.train_families} families; {len(self.held_out_families)} held out) ({self.pairs} pairs), "
            f"loss {self.losses[0]:.3f} -> {last}{held}, {self.seconds:.0f}s"
            if self.losses
            else f"warm start from {self.library}"
        )


def rendering_fingerprint() -> str:
    """sha256 over the source of the modules and templates that render the pairs."""
    digest = hashlib.sha256()
    package = importlib.resources.files(__package__ or "spade_async.warmstart")
    for name in _RENDERING:
        digest.update(package.joinpath(f"{name}.py").read_bytes())
    prompts = importlib.resources.files("spade_async.selfplay.prompts")
    for name in _TEMPLATES:
        digest.update(prompts.joinpath(f"{name}.txt").read_bytes())
    return digest.hexdigest()


def warm_start_key(cfg: Config, library: list[LibraryEnv]) -> str:
    """What the result depends on: the model and LoRA, the library's files, the settings, the
    warm start's seed, and the code and templates that render its pairs."""
    ws = cfg.warmstart
    parts = {
        "model": cfg.model.name,
        "lora": [cfg.model.lora_rank, cfg.model.lora_alpha, sorted(cfg.model.lora_targets), cfg.model.qlora],
        "library": library_fingerprint(library),
        "settings": [ws.held_out, ws.steps, ws.batch, ws.lr, ws.mutation_fraction, ws.mutation_targets],
        "prompt": [cfg.corpus.source, cfg.corpus.max_chars, cfg.engine.max_model_len],
        "domain": cfg.selfplay.domain,
        "seed": ws.seed,
        "rendering": rendering_fingerprint(),
        "format": FORMAT_VERSION,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cached_folder(cfg: Config) -> Path:
    """Where the warm start of ``cfg`` is cached: its key under ``~/.cache/spade-async/warmstart``."""
    library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
    return cache_root() / "warmstart" / warm_start_key(cfg, library)


def shipped_folder(cfg: Config) -> Path | None:
    """The result for ``cfg``'s key shipped inside the package, or None."""
    library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
    folder = Path(str(importlib.resources.files(__package__ or "spade_async.warmstart"))) / SHIPPED
    found = folder / warm_start_key(cfg, library)
    return found if read_result(found) is not None else None


def read_result(folder: Path) -> WarmStartResult | None:
    """A finished warm start in ``folder`` (its manifest and adapter), or None."""
    manifest = folder / MANIFEST
    if not manifest.is_file() or not (folder / ADAPTER / "adapter_model.safetensors").is_file():
        return None
    data: dict[str, Any] = json.loads(manifest.read_text())
    if data.get("format_version") != FORMAT_VERSION:
        return None
    return WarmStartResult(**data)


def _probe_targets(held: list[LibraryEnv], families: int) -> list[LibraryEnv]:
    """One file of each of the first ``families`` held-out families (by name)."""
    first: dict[str, LibraryEnv] = {}
    for env in sorted(held, key=lambda e: (e.family_name, e.name)):
        first.setdefault(env.family_name, env)
    return [first[name] for name in sorted(first)[:families]]


def run_warm_start(
    cfg: Config,
    *,
    engine: Engine,
    learner: SupervisedLearner,
    out: Path,
    report: Callable[[str], None] = print,
) -> WarmStartResult:
    """Train ``learner`` on the library's pairs and write ``out/adapter`` and ``out/warmstart.json``
    (atomically: a temporary folder renamed into place)."""
    ws = cfg.warmstart
    domain = cfg.selfplay.domain
    library = load_library(ws.library, domain)
    train, held = split_library(library, ws.held_out)
    rng = random.Random(ws.seed)
    corpus = Corpus.from_config(cfg.corpus, seed=ws.seed)
    max_len = cfg.engine.max_model_len

    def pair(target: LibraryEnv, mutation: bool, pool: list[LibraryEnv]) -> TrainSample:
        return design_pair(
            engine, target, pool, corpus, rng, mutation=mutation, domain=domain, mutation_targets=ws.mutation_targets
        )

    # Held-out pairs see only held-out files: a fresh pair's example and a mutation's parent come
    # from the held-out part too, so no file of a held-out family is ever trained on or shown.
    probe_envs = _probe_targets(held, ws.probe_families)
    probe = {e.family_name: [pair(e, m, held) for m in (False, True)] for e in probe_envs}
    result = WarmStartResult(
        key=warm_start_key(cfg, library),
        library=ws.library,
        train=[e.name for e in train],
        held_out=[e.name for e in held],
        steps=ws.steps,
        pairs=ws.steps * ws.batch,
        dtype=dtype_name(cfg.model.dtype, resolve_device(cfg.run.device)),
        train_families=len({e.family_name for e in train}),
        held_out_families=sorted({e.family_name for e in held}),
    )
    t0 = time.perf_counter()
    if probe:
        before = {name: learner.sft_loss(samples, max_len) for name, samples in probe.items()}
        result.held_out_loss_before = round(sum(before.values()) / len(before), 4)
    for step in range(ws.steps):
        batch = [pair(rng.choice(train), rng.random() < ws.mutation_fraction, train) for _ in range(ws.batch)]
        stats = learner.supervised_step(batch, max_len, ws.lr)
        result.losses.append(round(float(stats["sft_loss"]), 4))
        report(f"warm start step {step + 1}/{ws.steps}: loss {stats['sft_loss']:.3f} ({time.perf_counter() - t0:.0f}s)")
    if probe:
        after = {name: learner.sft_loss(samples, max_len) for name, samples in probe.items()}
        result.held_out_loss_after = round(sum(after.values()) / len(after), 4)
        result.held_out_by_family = {name: [round(before[name], 4), round(after[name], 4)] for name in sorted(probe)}
    result.seconds = round(time.perf_counter() - t0, 1)
    tmp = out.parent / f".{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    learner.save_adapter(tmp / ADAPTER)
    (tmp / MANIFEST).write_text(json.dumps(asdict(result), indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return result
