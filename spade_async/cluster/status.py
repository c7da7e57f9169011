"""What the run records about its cluster each step: live remote pools (and engine replicas)
as step metrics, and each loss or restart as a ``cluster`` event (the TUI's event log).

Why a function of its own, reading by attribute: the orchestrator calls it once per step and
stays the same on one box, where it returns nothing and records nothing. It knows the remote
sandbox pool by its ``live_pools``/``members``/``events`` and a remote engine by its
``live_replicas``/``replicas``/``events``, so it imports neither them nor Ray.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol


class EventSink(Protocol):
    async def record_event(self, step: int | None, kind: str, message: str) -> None: ...


EVENT_KIND = "cluster"

_recorded: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""How many of each source's events are in the run's database already."""


def cluster_metrics(pool: Any, engine: Any) -> dict[str, float]:
    """``cluster_pools_live``/``cluster_pools`` for remote sandbox pools and
    ``cluster_replicas_live``/``cluster_replicas`` for a remote engine; empty on one box."""
    metrics: dict[str, float] = {}
    if hasattr(pool, "live_pools") and hasattr(pool, "members"):
        poll = getattr(pool, "poll", None)
        if callable(poll):
            poll()  # take in replacements that answered since the last look
        metrics["cluster_pools_live"] = float(pool.live_pools)
        metrics["cluster_pools"] = float(len(pool.members))
    live, replicas = getattr(engine, "live_replicas", None), getattr(engine, "replicas", None)
    if isinstance(live, int) and isinstance(replicas, int):
        metrics["cluster_replicas_live"] = float(live)
        metrics["cluster_replicas"] = float(replicas)
    return metrics


async def record_cluster_status(step: int, pool: Any, engine: Any, store: EventSink) -> dict[str, float]:
    """Record the pool's and the engine's new cluster events for ``step``; return the metrics."""
    metrics = cluster_metrics(pool, engine)
    sources = ([pool] if "cluster_pools" in metrics else []) + ([engine] if "cluster_replicas" in metrics else [])
    for source in sources:
        events = [str(e) for e in getattr(source, "events", [])]
        for event in events[_recorded.get(source, 0):]:
            await store.record_event(step, EVENT_KIND, event)
        _recorded[source] = len(events)
    return metrics
