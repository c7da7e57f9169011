"""The lineage tree (spade_async.memory.lineage) built from hand-made rows: links, generations,
how each node ended, and the links it must cut (a parent that is not there, a loop)."""

from __future__ import annotations

import sqlite3

from spade_async.memory import queries
from spade_async.memory.lineage import (
    CUT_CYCLE,
    CUT_MISSING,
    END_EXPELLED,
    END_LIVE,
    END_NEVER_LIVE,
    END_REJECTED,
    END_RETIRED,
    END_RETIRED_BY_HAND,
    audit_event_message,
    build_lineage,
    parse_audit_event,
    read_lineage,
)
from spade_async.memory.records import LineageRow
from spade_async.memory.schema import MIGRATIONS


def row(
    env_id: str,
    parent: str | None = None,
    *,
    step: int = 0,
    updated: int | None = None,
    valid: bool = True,
    status: str = "retired",
    win: float | None = None,
    reasons: tuple[str, ...] = (),
) -> LineageRow:
    return LineageRow(
        id=env_id,
        parent_id=parent,
        origin="mutation" if parent else "fresh",
        skill="s",
        created_step=step,
        updated_step=updated,
        valid=valid,
        status=status,
        win_rate=win,
        regret=None,
        n_plays=0,
        reasons=reasons,
    )


def test_links_generations_and_walk_order() -> None:
    rows = [
        row("a", step=0, updated=1),
        row("b", "a", step=2, updated=3),
        row("c", "b", step=4, status="active", updated=4),
        row("d", "a", step=2, valid=False, status="invalid", reasons=("reset failed", "x")),
        row("e", step=1, updated=2),
    ]
    lin = build_lineage(rows)
    assert lin.roots == ("a", "e")
    assert lin.nodes["a"].children == ("b", "d")
    assert [n.id for n in lin.walk()] == ["a", "b", "c", "d", "e"]
    assert {k: n.generation for k, n in lin.nodes.items()} == {"a": 0, "b": 1, "c": 2, "d": 1, "e": 0}
    assert lin.edges() == [("a", "b"), ("b", "c"), ("a", "d")]
    assert [n.id for n in lin.line("c")] == ["a", "b", "c"]
    assert lin.branching_roots() == ["a"] and lin.depth() == 2
    assert (lin.nodes["c"].end, lin.nodes["c"].ended_step) == (END_LIVE, None)
    assert (lin.nodes["b"].end, lin.nodes["b"].ended_step) == (END_RETIRED, 3)
    d = lin.nodes["d"]
    assert (d.end, d.ended_step, d.end_reason) == (END_REJECTED, 2, "reset failed")


def test_expelled_retired_by_hand_and_never_live() -> None:
    rows = [
        row("seed"),  # recorded at the start, never drawn: no stats update
        row("x", "seed", step=0, updated=1, status="invalid"),
        row("y", "seed", step=0, updated=4, status="invalid"),  # expelled, no event found
        row("z", "seed", step=0, updated=5),
        row("w", "seed", step=0, updated=6, status="active"),  # retired by hand, then pinned back
    ]
    lin = build_lineage(rows, expelled={"x": (1, "won in play")}, retired_by_hand={"z": 3, "w": 2})
    assert lin.nodes["seed"].end == END_NEVER_LIVE
    x, y, z, w = (lin.nodes[k] for k in "xyzw")
    assert (x.end, x.ended_step, x.end_reason) == (END_EXPELLED, 1, "won in play")
    assert (y.end, y.ended_step, y.end_reason) == (END_EXPELLED, 4, None)
    assert (z.end, z.ended_step) == (END_RETIRED_BY_HAND, 3)
    assert w.end == END_LIVE


def test_a_missing_parent_makes_a_root_that_says_so() -> None:
    lin = build_lineage([row("a", "gone", step=1), row("b", "a", step=2)])
    a = lin.nodes["a"]
    assert lin.roots == ("a",) and a.parent_id is None and a.recorded_parent == "gone" and a.cut == CUT_MISSING
    assert lin.nodes["b"].generation == 1 and lin.nodes["b"].cut is None


def test_cycles_are_cut_at_their_oldest_node_and_nothing_is_lost() -> None:
    rows = [
        row("p", "r", step=3),
        row("q", "p", step=1),
        row("r", "q", step=2),  # p -> r -> q -> p
        row("t", "q", step=5),  # hangs off the cycle
        row("s", "s", step=4),  # its own parent
    ]
    lin = build_lineage(rows)
    assert set(lin.nodes) == {"p", "q", "r", "s", "t"}
    assert lin.roots == ("q", "s")  # q is the cycle's oldest (step 1)
    assert (lin.nodes["q"].cut, lin.nodes["s"].cut) == (CUT_CYCLE, CUT_CYCLE)
    assert [n.id for n in lin.walk()] == ["q", "r", "p", "t", "s"]
    assert {k: n.generation for k, n in lin.nodes.items()} == {"q": 0, "r": 1, "p": 2, "t": 1, "s": 0}


def test_a_long_line_needs_no_recursion() -> None:
    rows = [row("n0")] + [row(f"n{i}", f"n{i - 1}", step=i) for i in range(1, 3000)]
    lin = build_lineage(rows)
    assert lin.depth() == 2999 and len(lin.line("n2999")) == 3000


def test_a_repeated_id_keeps_its_first_row() -> None:
    lin = build_lineage([row("a", step=0), row("a", "b", step=3), row("b", "a", step=1)])
    assert lin.nodes["a"].parent_id is None and lin.nodes["b"].parent_id == "a"


def test_the_audit_message_round_trips() -> None:
    env_id = "ab" * 32
    assert parse_audit_event(audit_event_message(env_id, "won in play: 5/5")) == (env_id[:12], "won in play: 5/5")
    assert parse_audit_event("env abc failed during play: boom") is None


def test_lineage_rows_reads_the_schema() -> None:
    conn = sqlite3.connect(":memory:")
    for _name, sql in MIGRATIONS:
        conn.executescript(sql)
    conn.execute(
        "INSERT INTO environments (id, created_step, domain, origin, parent_id, code, valid, reasons, status, "
        "win_rate, n_plays, updated_step) VALUES ('c', 2, 'd', 'mutation', 'p', 'x', 0, 'not json', 'invalid', "
        "NULL, 3, 2)"
    )
    (r,) = queries.lineage_rows(conn)
    assert r == LineageRow("c", "p", "mutation", None, 2, 2, False, "invalid", None, None, 3, ("not json",))


def test_read_lineage_takes_ends_from_the_audits_events_and_applied_retirements() -> None:
    conn = sqlite3.connect(":memory:")
    for _name, sql in MIGRATIONS:
        conn.executescript(sql)
    ids = {name: name[0] * 64 for name in ("audited", "byhand", "refused", "parent")}

    def env(name: str, status: str, parent: str | None = "parent") -> None:
        conn.execute(
            "INSERT INTO environments (id, created_step, domain, origin, parent_id, code, valid, status, updated_step) "
            "VALUES (?, 0, 'games', 'mutation', ?, ?, 1, ?, 5)",
            (ids[name], None if parent is None else ids[parent], name, status),
        )

    env("parent", "retired", parent=None)
    env("audited", "invalid")
    env("byhand", "retired")
    env("refused", "retired")
    conn.execute(
        "INSERT INTO events (step, kind, message, created_at) VALUES (2, 'error', ?, 0)",
        (audit_event_message(ids["audited"], "won in play: every action wins"),),
    )
    for env_id, status, step in ((ids["byhand"], "applied", 3), (ids["refused"], "rejected", 1)):
        conn.execute(
            "INSERT INTO steer_actions (created_at, who, kind, args, status, step) VALUES (0, 't', 'retire', ?, ?, ?)",
            (f'{{"env_id": "{env_id}"}}', status, step),
        )
    lin = read_lineage(conn)
    audited, byhand, refused = (lin.nodes[ids[k]] for k in ("audited", "byhand", "refused"))
    assert (audited.end, audited.ended_step, audited.end_reason) == (END_EXPELLED, 2, "won in play: every action wins")
    assert (byhand.end, byhand.ended_step) == (END_RETIRED_BY_HAND, 3)
    assert (refused.end, refused.ended_step) == (END_RETIRED, 5)  # a refused request changed nothing
    assert lin.nodes[ids["parent"]].children == (ids["audited"], ids["byhand"], ids["refused"])
