"""The failure summary: play statistics from episode rows, their text, and their place in the design prompt."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

from spade_async.envs.seeds import load_seeds
from spade_async.memory.play_stats import (
    ACTION_CHARS,
    LOST_MOVE,
    NO_ACTION,
    OUT_OF_TURNS,
    PlayStats,
    aggregate,
    error_class,
    final_action,
    play_error_message,
)
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.memory.store import Store
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import DesignJob, design_prompt, fit_design_prompt
from spade_async.selfplay.design.failures import SUMMARY_TITLE, failure_summary
from spade_async.selfplay.prompts import render, render_example
from spade_async.testing import ScriptedEngine

ENV = "ab" * 32


def row(hinted: bool, outcome: float, turns: int, truncated: bool, text: str | None, role: str = "agent") -> tuple:
    """One EPISODE_SQL row (env_id first)."""
    return (ENV, int(hinted), outcome, turns, int(truncated), role, text)


ROWS = [
    row(False, 1.0, 2, False, "\\boxed{heads}"),
    row(False, 0.0, 3, False, "I think \\boxed{tails}"),
    row(False, 0.0, 1, False, "\\boxed{tails}"),
    row(False, 0.0, 10, True, "\\boxed{probe 3}"),
    row(False, -0.1, 10, True, "no box here"),
    row(True, 1.0, 2, False, "\\boxed{heads}"),
    row(True, 0.5, 2, False, "\\boxed{heads}"),
]


def test_statistics_count_wins_endings_and_final_actions() -> None:
    stats = aggregate(ENV, ROWS, [play_error_message(ENV, "SandboxTimeout: step took 2.0 s")] * 2)
    assert (stats.plain, stats.plain_wins, stats.lost) == (5, 1, 4)
    assert (stats.hinted, stats.hinted_wins, stats.hinted_mean) == (2, 1, 0.75)
    assert stats.plain_mean is not None and abs(stats.plain_mean - 0.9 / 5) < 1e-9
    assert (stats.mean_turns, stats.most_turns) == (26 / 5, 10)
    assert stats.loss_endings == ((OUT_OF_TURNS, 1), (LOST_MOVE, 2), (NO_ACTION, 1))
    assert stats.lost_actions == (("\\boxed{tails}", 2), ("\\boxed{probe 3}", 1))  # the win's move is not counted
    assert stats.distinct_lost_actions == 2
    assert stats.play_errors == (("SandboxTimeout", 2),)


def test_final_actions_are_cut_and_only_agent_replies_count() -> None:
    long = "x" * 100
    assert final_action("agent", f"\\boxed{{{long}}}") == "x" * (ACTION_CHARS - 3) + "..."
    assert final_action("agent", "<think>\\boxed{a}</think> so \\boxed{b}") == "b"
    assert final_action("observation", "\\boxed{a}") is None  # an episode with no agent turn
    assert final_action("agent", None) is None
    assert error_class(play_error_message(ENV, "EnvDataError: handling raised KeyError")) == "EnvDataError"
    assert error_class(play_error_message(ENV, "something odd happened")) == "error"


def test_the_summary_says_what_the_statistics_hold() -> None:
    text = failure_summary(aggregate(ENV, ROWS, [play_error_message(ENV, "SandboxTimeout: slow")]), max_turns=10)
    assert text.splitlines() == [
        f"{SUMMARY_TITLE} (5 plain plays, 2 with the hint):",
        "- won 1 of 5, mean score 0.18 without the hint; won 1 of 2, mean score 0.75 with it",
        "- turns used: 5.2 on average, at most 10, of 10",
        "- lost plays ended: out of turns x1, lost move x2, no action x1",
        "- last moves of lost plays: \\boxed{tails} x2, \\boxed{probe 3} x1",
        "- plays that crashed: SandboxTimeout x1",
    ]
    assert failure_summary(aggregate(ENV, []), max_turns=10) == ""  # never played: nothing to say
    wins_only = failure_summary(aggregate(ENV, [row(False, 1.0, 2, False, "\\boxed{a}")]), max_turns=4)
    assert "won 1 of 1 without the hint" in wins_only and "lost plays" not in wins_only
    scattered = [row(False, 0.0, 3, False, f"\\boxed{{guess {n}}}") for n in range(10, 15)]
    assert "- last moves of lost plays (5 different): \\boxed{guess 10} x1, \\boxed{guess 11} x1, " in failure_summary(
        aggregate(ENV, scattered), max_turns=4
    )


async def _migrate(db: Path) -> None:
    async with await Store.open(db):
        pass


async def _play_stats(db: Path, ids: list[str]) -> dict[str, PlayStats]:
    async with await Store.open(db) as store:
        return await store.play_stats(ids)


def test_the_sql_reads_the_newest_plays_and_the_crashes_of_each_environment(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    anyio.run(_migrate, db)
    conn = sqlite3.connect(db)
    other = "cd" * 32
    transcript = '[{"role": "observation", "text": "o"}, {"role": "agent", "text": "\\\\boxed{left}"}, {"role": "observation", "text": "Wrong."}]'
    for env_id in (ENV, other):
        conn.execute(
            "INSERT INTO environments (id, created_step, domain, origin, code, valid, status) "
            "VALUES (?, 0, 'games', 'seed', ?, 1, 'active')",
            (env_id, env_id),
        )
    conn.executemany(
        "INSERT INTO episodes (step, env_id, adapter_version, hinted, outcome, turns, truncated, transcript) "
        "VALUES (?, ?, 0, 0, 0.0, 2, 0, ?)",
        [(0, ENV, transcript), (1, ENV, transcript), (0, other, "[]")],
    )
    conn.execute(
        "INSERT INTO events (step, kind, message, created_at) VALUES (0, 'error', ?, 0)",
        (play_error_message(ENV, "SandboxCrash: died"),),
    )
    conn.commit()
    conn.close()
    stats = anyio.run(_play_stats, db, [ENV, other, "ef" * 32])
    assert stats[ENV].lost_actions == (("\\boxed{left}", 2),) and stats[ENV].play_errors == (("SandboxCrash", 1),)
    assert stats[other].loss_endings == ((NO_ACTION, 1),) and stats[other].play_errors == ()
    assert stats["ef" * 32].empty


# -- the design prompt ----------------------------------------------------------------------

SUMMARY = f"{SUMMARY_TITLE} (4 plain plays, 2 with the hint):\n- won 0 of 4 without the hint"


def job(origin: str) -> tuple[DesignJob, EnvRecord]:
    seed = load_seeds()[0]
    rec = EnvRecord(code=seed.source, domain="games", skill=seed.skill, origin="seed", created_step=0, win_rate=0.0)
    parent = rec if origin == "mutation" else None
    return (
        DesignJob(
            seed.skill,
            Document("d", "t", "some document text " * 20),
            origin,
            parent=parent,
            examples=[Example(rec, "impossible")],
            change="one change",
            summaries={rec.id: SUMMARY},
        ),
        rec,
    )


def test_an_example_block_without_a_summary_is_unchanged() -> None:
    code = load_seeds()[0].source
    assert render_example(code, 1) == render(
        "example", title="Example 1", verdict="a working game", code=code.strip("\n")
    )
    assert render_example(code, 1, summary="S").endswith("```\nS")


def test_the_summary_is_shown_under_the_example_and_under_the_parent() -> None:
    engine = ScriptedEngine()
    for origin in ("fresh", "mutation"):
        j, rec = job(origin)
        text = engine.decode(design_prompt(engine, j))
        assert SUMMARY in text, origin
        code_end = text.index(rec.code.strip()[-40:])
        assert code_end < text.index(SUMMARY), origin  # under its code
        assert SUMMARY not in engine.decode(
            design_prompt(engine, DesignJob(j.skill, j.doc, origin, j.parent, j.examples))
        )


def test_the_fitting_drops_the_summary_before_the_example() -> None:
    engine = ScriptedEngine()
    for origin in ("fresh", "mutation"):
        j, _ = job(origin)
        full = len(design_prompt(engine, j))
        _, kept = fit_design_prompt(engine, j, full)
        assert kept.summaries == j.summaries  # it fits: nothing dropped
        ids, shown = fit_design_prompt(engine, j, full - 1)
        assert shown.summaries == {} and shown.origin == origin and len(shown.examples) == 1
        assert shown.doc == j.doc and len(ids) == full - len(SUMMARY) - 1
