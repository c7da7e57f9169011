"""The archive's pure parts: who joins the fixed sample and in what order, its saved state,
a round's rows and its 'still solved' fraction, and the figures and line a round reports."""

from __future__ import annotations

import math

import pytest

from spade_async.eval.archive.player import archive_metrics, format_archive_line
from spade_async.eval.archive.rounds import round_rows, rounds
from spade_async.eval.archive.sample import ArchiveSample, Member, archive_seed, join_order
from spade_async.run.checkpoint import decode_state, encode_state
from spade_async.selfplay.curriculum import LiveEnv


def env(name: str, outcomes: list[float], *, expelled: str | None = None) -> LiveEnv:
    e = LiveEnv(name, f"code of {name}", None, "Logic", "seed", 0, expelled=expelled)
    if outcomes:
        e.plain[0] = outcomes
    e.hinted[0] = [1.0]  # hinted plays do not count towards the return at retirement
    return e


def test_retirees_join_in_seeded_order_while_there_is_room_and_then_stay() -> None:
    sample = ArchiveSample(size=3, seed=7)
    first = [env(f"e{i}", [1.0, 0.0]) for i in range(5)]
    joined = sample.offer(4, first)
    ranked = sorted((e.env_id for e in first), key=lambda i: join_order(7, i))
    assert [m.env_id for m in joined] == ranked[:3] == [m.env_id for m in sample.members]
    assert all(m.retired_step == 4 and m.return_then == 0.5 and m.code == f"code of {m.env_id}" for m in joined)
    assert sample.offer(6, [env("late", [1.0])]) == []  # full: the sample stays fixed
    # Another seed orders them differently (it is seeded, not first-come).
    assert [m.env_id for m in ArchiveSample(3, seed=8).offer(4, first)] != ranked[:3]


def test_expelled_never_played_and_already_archived_environments_do_not_join() -> None:
    sample = ArchiveSample(size=10, seed=0)
    sample.offer(2, [env("a", [0.25])])
    joined = sample.offer(
        4, [env("a", [1.0]), env("bad", [1.0], expelled="audit"), env("unplayed", []), env("b", [0.0])]
    )
    assert [m.env_id for m in joined] == ["b"]
    # "a" keeps the return it retired with the first time.
    assert [(m.env_id, m.retired_step, m.return_then) for m in sample.members] == [("a", 2, 0.25), ("b", 4, 0.0)]


def test_state_round_trips_through_a_checkpoint_document() -> None:
    import random

    import numpy as np
    import torch

    sample = ArchiveSample(size=4, seed=1)
    sample.offer(2, [env("a", [1.0]), env("b", [0.5])])
    state = {
        "step": 3,
        "config_hash": "h",
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "snapshot": {"archive": sample.state()},
        "learner": None,
    }
    document, tensors = encode_state(state)
    restored = ArchiveSample(size=4, seed=1)
    restored.load_state(decode_state(document, tensors)["snapshot"]["archive"])
    assert restored.members == sample.members
    restored.load_state(None)  # a checkpoint from before the archive
    assert restored.members == []
    with pytest.raises(ValueError, match="version"):
        restored.load_state({"version": 99, "members": []})


def test_episode_seeds_are_the_same_every_round_and_differ_per_play() -> None:
    assert archive_seed(3, "a", 0) == archive_seed(3, "a", 0)
    assert (
        len({archive_seed(3, "a", 0), archive_seed(3, "a", 1), archive_seed(3, "b", 0), archive_seed(4, "a", 0)}) == 4
    )
    assert all(0 <= archive_seed(s, "a", 0) < 2**31 for s in range(20))


def member(name: str, then: float) -> Member:
    return Member(name, "code", "Logic", 2, then)


def test_still_solved_is_the_share_of_those_solved_at_retirement_still_solved_now() -> None:
    results = [
        (member("kept", 0.9), [1.0, 0.5], 0),  # 0.75: still solved
        (member("forgotten", 0.8), [0.0, 0.5], 0),  # 0.25: forgotten
        (member("at_threshold", 0.5), [0.5], 1),  # >= counts as solved, then and now
        (member("never", 0.1), [1.0], 0),  # not solved at retirement: not in the fraction
        (member("all_errored", 1.0), [], 2),  # no return this round: left out of the fraction
    ]
    stored = round_rows(5, "v3-v4", results, solved=0.5, seconds=2.0)
    assert [
        (r["env_id"], r["return_now"], r["n"], r["n_errors"], r["solved_then"], r["solved_now"]) for r in stored
    ] == [
        ("kept", 0.75, 2, 0, 1, 1),
        ("forgotten", 0.25, 2, 0, 1, 0),
        ("at_threshold", 0.5, 1, 1, 1, 1),
        ("never", 1.0, 1, 0, 0, 1),
        ("all_errored", None, 0, 2, 1, 0),
    ]
    (r,) = rounds(stored)
    assert (r.step, r.adapter, r.envs, r.solved_then, r.still_solved) == (6, "v3-v4", 5, 3, 2)
    assert r.fraction == pytest.approx(2 / 3)
    assert r.return_now == pytest.approx((0.75 + 0.25 + 0.5 + 1.0) / 4)
    assert r.return_then == pytest.approx((0.9 + 0.8 + 0.5 + 0.1) / 4)
    figures = archive_metrics(r, skipped=1, seconds=2.0)
    assert figures["archive/still_solved"] == pytest.approx(2 / 3) and figures["archive/skipped"] == 1.0
    line = format_archive_line(r, skipped=1, seconds=2.0)
    assert line.startswith("archive after step 6, v3-v4 | still solved 2/3 (0.67) | return 0.625")


def test_rounds_group_rows_by_step_and_none_solved_has_no_fraction() -> None:
    stored = round_rows(1, "v1", [(member("a", 0.0), [1.0], 0)], 0.5, 1.0) + round_rows(
        3, "v2", [(member("a", 0.0), [0.0], 0)], 0.5, 1.0
    )
    found = rounds(reversed(stored))
    assert [r.step for r in found] == [2, 4]
    assert math.isnan(found[0].fraction)
    assert "archive/still_solved" not in archive_metrics(found[0], 0, 1.0)  # NaN is not a figure
    assert "still solved 0/0 |" in format_archive_line(found[0], 0, 1.0)
