"""The base model's held-out scores, computed once per run folder and reused by later evals.

Why: ``spade-async eval`` compares every adapter with the base model on the same items. The
base model does not change while a run trains, so for the same suite, items, sampling and
episode rules its scores are a draw from the same distribution every time; scoring it again
on every call doubled the cost of evaluating one checkpoint (issue 26: 200 s of 350 s).

Key: everything that decides a base score goes into the key, and a changed key is a
different cache entry (a miss, scored again): the model name and dtype, the engine's length
limit, the suite's name and ``cache_fingerprint`` (a games suite: the environments' source
and the win threshold; reasoning-gym: the answer length, the dataset seed and the package
version), every item key (games: environment and held-out seed), the agent sampling section
(temperature, top_p, max_new_tokens, stop, enable_thinking), the episode rules (turn limit,
context budget, no-action penalty, action prefill) and the spade-async version (a change of
the playing code is a change of the key). A suite without ``cache_fingerprint`` (a plugin
that does not say what its items depend on) is never cached.

Storage: ``RUN_DIR/eval/base_cache/<hash>.json`` holding the full key (checked on load, so a
hash collision or a hand-edited file is a miss), the per-item scores and the seconds they
took (the plan's time estimate for the base model reads them). Written to a temporary file
and renamed, so an interrupted eval leaves either the whole entry or none.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_async.config import Config
from spade_async.eval.suites import CacheableSuite, EvalItem, ItemScore, Suite
from spade_async.selfplay.play.agent import agent_context_budget

CACHE_DIR = Path("eval") / "base_cache"
"""Relative to the run folder."""
FORMAT = 1


def _version() -> str:
    from spade_async import __version__

    return __version__


def base_key(cfg: Config, suite: Suite, items: list[EvalItem], max_model_len: int | None) -> dict[str, Any] | None:
    """What the base model's scores on ``items`` depend on; None when the suite cannot say."""
    if not isinstance(suite, CacheableSuite):
        return None
    agent, sp = cfg.engine.agent, cfg.selfplay
    return {
        "format": FORMAT,
        "spade_async": _version(),
        "model": cfg.model.name,
        "dtype": cfg.model.dtype,
        "max_model_len": max_model_len,
        "suite": suite.name,
        "fingerprint": suite.cache_fingerprint(),
        "sampling": agent.model_dump(mode="json"),
        "play": {
            "max_turns": sp.max_turns,
            "context_budget": agent_context_budget(sp.max_context_tokens, max_model_len),
            "no_action_penalty": sp.no_action_penalty,
            "action_prefill": sp.action_prefill,
        },
        "items": [item.key for item in items],
    }


def key_hash(key: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def _jsonable(detail: dict[str, Any]) -> dict[str, Any]:
    try:
        json.dumps(detail)
    except (TypeError, ValueError):
        return {}
    return detail


@dataclass
class CachedBase:
    scores: list[ItemScore]
    seconds: float
    """Seconds the base model took to score these items when they were cached (NaN: unknown)."""


class BaseCache:
    """Base-model scores of one run folder, one file per key."""

    def __init__(self, run_dir: Path) -> None:
        self.root = run_dir / CACHE_DIR

    def path(self, key: dict[str, Any]) -> Path:
        return self.root / f"{key_hash(key)}.json"

    def load(self, key: dict[str, Any] | None) -> CachedBase | None:
        if key is None:
            return None
        try:
            saved = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != key:
            return None
        try:
            scores = [ItemScore(float(s), bool(ok), err, dict(detail or {})) for s, ok, err, detail in saved["scores"]]
            seconds = float(saved.get("seconds", math.nan))
        except (KeyError, TypeError, ValueError):
            return None
        if len(scores) != len(key["items"]):
            return None
        return CachedBase(scores, seconds)

    def save(self, key: dict[str, Any] | None, scores: list[ItemScore], seconds: float) -> Path | None:
        if key is None:
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        rows = [[s.score, s.solved, s.error, _jsonable(s.detail)] for s in scores]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "scores": rows, "seconds": seconds}))
        tmp.replace(path)
        return path
