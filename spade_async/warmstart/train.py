"""Run a warm start: pairs from the library, supervised steps, the adapter and its manifest.

Why a result folder with a manifest: the run starts from ``adapter/`` and records
``warmstart.json`` (library, settings, losses) beside it in the run folder, so what the run
started from is inspectable; the same key (model, library contents, settings, seed) reuses a
previous result from the cache instead of training again (``warm_start_key``).
"""

from __future__ import annotations

import hashlib
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
FORMAT_VERSION = 1


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
            f"warm start: {self.steps} steps on {len(self.train)} library files ({self.pairs} pairs), "
            f"loss {self.losses[0]:.3f} -> {last}{held}, {self.seconds:.0f}s"
            if self.losses
            else f"warm start from {self.library}"
        )


def warm_start_key(cfg: Config, library: list[LibraryEnv]) -> str:
    """What the result depends on: the model and LoRA, the library's files, the settings, the seed."""
    ws = cfg.warmstart
    parts = {
        "model": cfg.model.name,
        "dtype": dtype_name(cfg.model.dtype, resolve_device(cfg.run.device)),  # bf16 and float32 train apart
        "lora": [cfg.model.lora_rank, cfg.model.lora_alpha, sorted(cfg.model.lora_targets), cfg.model.qlora],
        "library": library_fingerprint(library),
        "settings": [ws.held_out, ws.steps, ws.batch, ws.lr, ws.mutation_fraction, ws.mutation_targets],
        "corpus": [cfg.corpus.source, cfg.corpus.max_chars],
        "domain": cfg.selfplay.domain,
        "seed": cfg.run.seed,
        "format": FORMAT_VERSION,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def cached_folder(cfg: Config) -> Path:
    """Where the warm start of ``cfg`` is cached: its key under ``~/.cache/spade-async/warmstart``."""
    library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
    return cache_root() / "warmstart" / warm_start_key(cfg, library)


def read_result(folder: Path) -> WarmStartResult | None:
    """A finished warm start in ``folder`` (its manifest and adapter), or None."""
    manifest = folder / MANIFEST
    if not manifest.is_file() or not (folder / ADAPTER / "adapter_model.safetensors").is_file():
        return None
    data: dict[str, Any] = json.loads(manifest.read_text())
    if data.get("format_version") != FORMAT_VERSION:
        return None
    return WarmStartResult(**data)


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
    rng = random.Random(cfg.run.seed)
    corpus = Corpus.from_config(cfg.corpus, seed=cfg.run.seed)
    max_len = cfg.engine.max_model_len

    def pair(target: LibraryEnv, mutation: bool, pool: list[LibraryEnv]) -> TrainSample:
        return design_pair(
            engine, target, pool, corpus, rng, mutation=mutation, domain=domain, mutation_targets=ws.mutation_targets
        )

    probe = [pair(e, m, library) for e in held for m in (False, True)]
    result = WarmStartResult(
        key=warm_start_key(cfg, library),
        library=ws.library,
        train=[e.name for e in train],
        held_out=[e.name for e in held],
        steps=ws.steps,
        pairs=ws.steps * ws.batch,
    )
    t0 = time.perf_counter()
    if probe:
        result.held_out_loss_before = learner.sft_loss(probe, max_len)
    for step in range(ws.steps):
        batch = [pair(rng.choice(train), rng.random() < ws.mutation_fraction, train) for _ in range(ws.batch)]
        stats = learner.supervised_step(batch, max_len, ws.lr)
        result.losses.append(round(float(stats["sft_loss"]), 4))
        report(f"warm start step {step + 1}/{ws.steps}: loss {stats['sft_loss']:.3f} ({time.perf_counter() - t0:.0f}s)")
    if probe:
        result.held_out_loss_after = learner.sft_loss(probe, max_len)
    result.seconds = round(time.perf_counter() - t0, 1)
    tmp = out.parent / f".{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    learner.save_adapter(tmp / ADAPTER)
    (tmp / MANIFEST).write_text(json.dumps(asdict(result), indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return result
