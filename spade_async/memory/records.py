"""Plain records that go into and come out of the run database.

Why separate from ``store.py``: stages (designer, orchestrator, retrieval, TUI) build and
read these without touching SQLite or asyncio, and pure functions such as retrieval can be
tested on hand-made records. Field names mirror the columns in ``schema.py``.

Environments are content-addressed: :func:`env_id_for` (sha256 of the code) is the id, so
the same code designed twice is one row, whatever else differs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

RUN_STATUSES: tuple[str, ...] = ("running", "finished", "failed", "interrupted")
ENV_STATUSES: tuple[str, ...] = ("active", "retired", "invalid")
ENV_ORIGINS: tuple[str, ...] = ("seed", "fresh", "mutation", "repair", "injected")
"""``injected``: added to a live run by a person (``spade-async steer RUN_DIR inject``), never credited to the designer."""


def env_id_for(code: str) -> str:
    """The environment id: sha256 hex of the code (UTF-8)."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass
class EnvRecord:
    """One environment as stored in ``environments``; ``id`` is computed from ``code``."""

    code: str
    domain: str
    skill: str | None
    origin: str
    """seed | fresh | mutation | repair | injected"""
    created_step: int
    hint: str | None = None
    doc_title: str | None = None
    doc_text: str | None = None
    valid: bool = True
    reasons: list[str] = field(default_factory=list)
    """Validation reasons (why it was rejected, or warnings)."""
    status: str = "active"
    """active | retired | invalid"""
    win_rate: float | None = None
    """Hint-free win rate w (mean plain outcome over the environment's life)."""
    hint_win_rate: float | None = None
    regret: float | None = None
    designer_reward: float | None = None
    n_plays: int = 0
    parent_id: str | None = None
    updated_step: int | None = None
    """Step of the last stats update (set by the store)."""
    run_id: int | None = None
    """Run that first recorded it (set by the store)."""

    @property
    def id(self) -> str:
        return env_id_for(self.code)


@dataclass
class EpisodeRecord:
    """One play of an environment (plain or hinted)."""

    step: int
    env_id: str
    adapter_version: int
    hinted: bool
    outcome: float
    """Clipped reward of the terminating step; 0 when truncated."""
    turns: int
    truncated: bool = False
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """List of {role, text, reward} turns."""
    id: int | None = None
    """Row id (set when read back)."""


@dataclass
class StepRecord:
    """One rollout step's metrics (keys in ``schema.METRIC_KEYS``; NaN is stored as null)."""

    step: int
    adapter_version: int
    metrics: dict[str, Any]
    wall_s: float | None
    created_at: float


@dataclass
class EventRecord:
    step: int | None
    kind: str
    message: str
    created_at: float


@dataclass
class RunRecord:
    id: int
    name: str
    config_toml: str
    config_hash: str
    created_at: float
    status: str
    isolation: dict[str, Any] | None


@dataclass(frozen=True)
class LineageRow:
    """One environment as its lineage reads it (``spade_async.memory.lineage``): the columns of
    ``environments`` a tree of mutations needs, without the bulky code and document."""

    id: str
    parent_id: str | None
    origin: str
    skill: str | None
    created_step: int
    updated_step: int | None
    """Step of the last stats update: for an environment no longer live, the step it left."""
    valid: bool
    status: str
    win_rate: float | None
    regret: float | None
    n_plays: int
    reasons: tuple[str, ...] = ()
    """Validation reasons (why admission refused it)."""
