"""What the run records about its cluster each step: live remote pools and engine replicas
as step metrics, and each loss or restart as a ``cluster`` event (the TUI's event log).

Why a function of its own over a :class:`Fleet` protocol: the orchestrator calls it once per
step with the fleets the launcher started (``run/assemble.py`` hands over each remote pool or
engine it builds) and stays the same on one box, where there are none and it records nothing.
It imports neither the remote classes nor Ray.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Protocol


class EventSink(Protocol):
    async def record_event(self, step: int | None, kind: str, message: str) -> None: ...


class Fleet(Protocol):
    """Members on other machines behind one local interface (remote pools, engine replicas)."""

    fleet_name: str
    """What its members are, for the metric names: ``pools`` or ``replicas``."""
    events: list[str]
    """Every loss and restart so far, oldest first."""

    def fleet_size(self) -> tuple[int, int]:
        """(members serving now, members started); takes in replacements that answered."""
        ...


EVENT_KIND = "cluster"

_recorded: weakref.WeakKeyDictionary[Fleet, int] = weakref.WeakKeyDictionary()
"""How many of each fleet's events are in the run's database already."""


def cluster_metrics(fleets: Sequence[Fleet]) -> dict[str, float]:
    """``cluster_pools_live``/``cluster_pools`` for remote sandbox pools and
    ``cluster_replicas_live``/``cluster_replicas`` for a remote engine; empty on one box."""
    metrics: dict[str, float] = {}
    for fleet in fleets:
        live, total = fleet.fleet_size()
        metrics[f"cluster_{fleet.fleet_name}_live"] = float(live)
        metrics[f"cluster_{fleet.fleet_name}"] = float(total)
    return metrics


async def record_cluster_status(step: int, fleets: Sequence[Fleet], store: EventSink) -> dict[str, float]:
    """Record each fleet's new cluster events for ``step``; return the metrics."""
    metrics = cluster_metrics(fleets)
    for fleet in fleets:
        events = [str(e) for e in fleet.events]
        for event in events[_recorded.get(fleet, 0) :]:
            await store.record_event(step, EVENT_KIND, event)
        _recorded[fleet] = len(events)
    return metrics
