"""The lineage of a run's environments: the tree of mutations, and how each line ended.

Why derived rather than stored: the store already records all a tree needs. Every designed
environment keeps the parent it was mutated from (``environments.parent_id``, written once,
never updated), its stats, and how it stands; the play audit's expulsions are ``error``
events and retirements by hand are applied ``retire`` steering actions. So the tree is read,
not written: an old run's database shows its lineage too, and no writer has to keep a second
record in step with the first. How a node ended, and when (steps as the database counts them,
from 0):

- ``rejected``: admission refused the design (``valid = 0``); it ended the step it was designed.
- ``expelled``: admitted, then expelled by the play audit (``valid = 1``, ``status = 'invalid'``);
  the step and reason of the audit's event (:func:`audit_event_message` writes it).
- ``retired by hand``: a person retired it (``spade-async steer ... retire``); the step it took effect.
- ``retired``: it left the live set with its generation (memory may bring it back later); the
  step of its last stats update, which for an environment no longer live is the step it left.
- ``never live``: in memory but never played (a seed game the run did not draw).
- ``live``: in the live set at the last step recorded.

The generation of a node is the number of mutation links between it and its root (a seed, a
fresh design, an injected environment, or one whose parent cannot be followed). A parent id
that names no row (``missing``), or links that loop (``cycle``; content addressing makes one
possible only when the same code is designed again with another parent, which keeps its
first) are cut, and the node becomes a root that says why (``LineageNode.cut``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from spade_async.memory import queries
from spade_async.memory.records import LineageRow
from spade_async.memory.steering import read_actions

END_LIVE = "live"
END_RETIRED = "retired"
END_RETIRED_BY_HAND = "retired by hand"
END_EXPELLED = "expelled"
END_REJECTED = "rejected"
END_NEVER_LIVE = "never live"
ENDS: tuple[str, ...] = (END_LIVE, END_RETIRED, END_RETIRED_BY_HAND, END_EXPELLED, END_REJECTED, END_NEVER_LIVE)
"""How a node of the lineage stands (see the module docstring)."""

CUT_MISSING = "missing"
CUT_CYCLE = "cycle"

_AUDIT_EVENT = re.compile(r"env ([0-9a-f]{12}) retired by the play audit: (.*)", re.DOTALL)


def audit_event_message(env_id: str, reason: str) -> str:
    """The ``error`` event the pipeline writes when the play audit expels ``env_id`` (read back
    by :func:`read_lineage`: one format on both sides)."""
    return f"env {env_id[:12]} retired by the play audit: {reason}"


def parse_audit_event(message: str) -> tuple[str, str] | None:
    """``(id prefix, reason)`` of an :func:`audit_event_message`, None for any other message."""
    m = _AUDIT_EVENT.fullmatch(message)
    return (m.group(1), m.group(2)) if m else None


@dataclass(frozen=True)
class LineageNode:
    """One environment in the tree (steps counted from 0, as the database does)."""

    id: str
    parent_id: str | None
    """The parent in the tree (None for a root)."""
    recorded_parent: str | None
    """The parent as recorded (differs from ``parent_id`` when the link was ``cut``)."""
    cut: str | None
    """Why the recorded parent is not followed: ``missing`` or ``cycle``; None otherwise."""
    origin: str
    skill: str | None
    created_step: int
    win_rate: float | None
    regret: float | None
    n_plays: int
    generation: int
    """Mutation links between this node and its root (0 for a root)."""
    end: str
    """One of :data:`ENDS`."""
    ended_step: int | None
    """When it ended (None while live, or when unknown)."""
    end_reason: str | None
    """Why, where recorded: the first validation reason, the audit's reason."""
    children: tuple[str, ...] = ()
    """Ids of its mutations, oldest first."""


@dataclass(frozen=True)
class Lineage:
    """The forest of a run's environments: ``nodes`` by id, ``roots`` oldest first."""

    nodes: dict[str, LineageNode] = field(default_factory=dict)
    roots: tuple[str, ...] = ()

    def edges(self) -> list[tuple[str, str]]:
        """``(parent, child)`` of every link kept in the tree, in walk order."""
        return [(n.parent_id, n.id) for n in self.walk() if n.parent_id is not None]

    def walk(self, roots: Sequence[str] | None = None) -> Iterator[LineageNode]:
        """Every node under ``roots`` (default: all), depth first, parents before children."""
        stack = list(reversed(self.roots if roots is None else roots))
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            stack.extend(reversed(node.children))

    def line(self, env_id: str) -> list[LineageNode]:
        """The nodes from ``env_id``'s root down to it."""
        out = [self.nodes[env_id]]
        while out[-1].parent_id is not None:
            out.append(self.nodes[out[-1].parent_id])
        return out[::-1]

    def branching_roots(self) -> list[str]:
        """Roots with at least one mutation: the lines worth drawing."""
        return [r for r in self.roots if self.nodes[r].children]

    def depth(self) -> int:
        """The highest generation (0 when nothing was mutated)."""
        return max((n.generation for n in self.nodes.values()), default=0)


def _end(
    row: LineageRow, expelled: Mapping[str, tuple[int | None, str]], by_hand: Mapping[str, int]
) -> tuple[str, int | None, str | None]:
    if not row.valid:
        return END_REJECTED, row.created_step, row.reasons[0] if row.reasons else None
    if row.status == "active":
        return END_LIVE, None, None
    if row.status == "invalid":
        step, reason = expelled.get(row.id, (row.updated_step, None))
        return END_EXPELLED, row.updated_step if step is None else step, reason
    if row.id in by_hand:
        return END_RETIRED_BY_HAND, by_hand[row.id], None
    if row.updated_step is None:
        return END_NEVER_LIVE, None, None
    return END_RETIRED, row.updated_step, None


def _tree_parents(rows: Sequence[LineageRow]) -> tuple[dict[str, str], dict[str, str]]:
    """``(parent of each linked node, why each cut node's link was cut)``."""
    ids = {r.id for r in rows}
    order = {r.id: (r.created_step, i) for i, r in enumerate(rows)}
    parent: dict[str, str] = {}
    cut: dict[str, str] = {}
    for r in rows:
        if r.parent_id is None:
            continue
        if r.parent_id not in ids:
            cut[r.id] = CUT_MISSING
        elif r.parent_id == r.id:
            cut[r.id] = CUT_CYCLE
        else:
            parent[r.id] = r.parent_id
    while True:  # a node that no root reaches sits on (or under) a cycle: cut the cycle's oldest link
        children: dict[str, list[str]] = {}
        for child, p in parent.items():
            children.setdefault(p, []).append(child)
        reached: set[str] = set()
        stack = [i for i in ids if i not in parent]
        while stack:
            node = stack.pop()
            if node not in reached:
                reached.add(node)
                stack.extend(children.get(node, ()))
        unreached = sorted((i for i in ids if i not in reached), key=order.__getitem__)
        if not unreached:
            return parent, cut
        seen: list[str] = []
        node = unreached[0]
        while node not in seen:
            seen.append(node)
            node = parent[node]
        cycle = seen[seen.index(node) :]
        oldest = min(cycle, key=order.__getitem__)
        del parent[oldest]
        cut[oldest] = CUT_CYCLE


def build_lineage(
    rows: Sequence[LineageRow],
    *,
    expelled: Mapping[str, tuple[int | None, str]] | None = None,
    retired_by_hand: Mapping[str, int] | None = None,
) -> Lineage:
    """The tree of ``rows`` (oldest first; a repeated id keeps its first row).

    ``expelled``: id -> (step, reason) of the play audit's expulsions; ``retired_by_hand``:
    id -> step of an applied retirement by hand.
    """
    unique: dict[str, LineageRow] = {}
    for r in rows:
        unique.setdefault(r.id, r)
    ordered = list(unique.values())
    parent, cut = _tree_parents(ordered)
    order = {r.id: (r.created_step, i) for i, r in enumerate(ordered)}
    kids: dict[str, list[str]] = {}
    for child, p in parent.items():
        kids.setdefault(p, []).append(child)
    generation: dict[str, int] = {}
    roots = sorted((r.id for r in ordered if r.id not in parent), key=order.__getitem__)
    stack = [(r, 0) for r in roots]
    while stack:
        node, depth = stack.pop()
        generation[node] = depth
        stack.extend((c, depth + 1) for c in kids.get(node, ()))
    nodes: dict[str, LineageNode] = {}
    for r in ordered:
        end, ended, why = _end(r, expelled or {}, retired_by_hand or {})
        nodes[r.id] = LineageNode(
            id=r.id,
            parent_id=parent.get(r.id),
            recorded_parent=r.parent_id,
            cut=cut.get(r.id),
            origin=r.origin,
            skill=r.skill,
            created_step=r.created_step,
            win_rate=r.win_rate,
            regret=r.regret,
            n_plays=r.n_plays,
            generation=generation[r.id],
            end=end,
            ended_step=ended,
            end_reason=why,
            children=tuple(sorted(kids.get(r.id, ()), key=order.__getitem__)),
        )
    return Lineage(nodes=nodes, roots=tuple(roots))


def read_lineage(conn: sqlite3.Connection) -> Lineage:
    """The lineage of the run database behind ``conn`` (read only; any row factory)."""
    rows = queries.lineage_rows(conn)
    by_prefix: dict[str, str] = {r.id[:12]: r.id for r in rows if r.valid and r.status == "invalid"}
    expelled: dict[str, tuple[int | None, str]] = {}
    for step, message in queries.events_of_kind(conn, "error"):
        parsed = parse_audit_event(str(message))
        if parsed is not None and parsed[0] in by_prefix:
            expelled[by_prefix[parsed[0]]] = (None if step is None else int(step), parsed[1])
    by_hand: dict[str, int] = {}
    for action in read_actions(conn):
        env_id = action.args.get("env_id")
        if (
            action.kind == "retire"
            and action.status == "applied"
            and isinstance(env_id, str)
            and action.step is not None
        ):
            by_hand[env_id] = action.step
    return build_lineage(rows, expelled=expelled, retired_by_hand=by_hand)
