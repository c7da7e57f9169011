"""The eval plan's time estimates: the time left follows what was measured (issue 26 saw
``0:00:01`` with 57 of 72 episodes left), and the plan says what is cached and what is scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.envs.seeds import load_seeds
from spade_async.eval.base_cache import base_key
from spade_async.eval.plan import (
    Eta,
    Phase,
    format_seconds,
    load_timing,
    plan_lines,
    prior_seconds_per_item,
    save_timing,
    suite_line,
    training_seconds_per_episode,
)
from spade_async.eval.suites import (
    AnswerSuite,
    CacheableSuite,
    EpisodeSuite,
    EvalContext,
    EvalItem,
    ItemScore,
    Suite,
)
from spade_async.eval.suites.games import GamesSuite


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_time_left_in_waves_matches_the_measured_rate() -> None:
    """Two models x 36 items, 12 at a time, each wave of 12 takes 30 s (2.5 s per item)."""
    clock = Clock()
    eta = Eta([Phase("base", 36), Phase("step_1", 36)], concurrency=12, prior_s_per_item=None, clock=clock)
    assert eta.remaining() is None  # nothing measured, no prior: unknown, not invented
    eta.update("base", 0)
    clock.t = 10.0
    assert eta.remaining() is None  # still nothing ended
    clock.t = 29.0
    eta.update("base", 1)  # the first wave has taken 29 s at least: >= 29/12 s per item
    assert eta.remaining() == pytest.approx((35 + 36) * 29 / 12)
    clock.t = 30.0
    eta.update("base", 12)
    assert eta.remaining() == pytest.approx((24 + 36) * 2.5)
    clock.t = 45.0  # half-way through the second wave, nothing new ended: the estimate does not collapse
    assert eta.remaining() == pytest.approx(24 * 45 / 12 + 36 * 45 / 12)
    clock.t = 90.0
    eta.update("base", 36)
    eta.update("step_1", 0)
    assert eta.items_left() == 36
    assert eta.remaining() == pytest.approx(90.0)  # 90 s measured for 36 items
    clock.t = 100.0  # inside the adapter's first wave: the measured rate, never a second or two
    assert eta.remaining() == pytest.approx(90.0)


def test_a_prior_proven_wrong_by_the_clock_is_dropped() -> None:
    """Seen on a loaded machine: a 1.4 s/item prior, 24 items, and after 298 s only one item
    had ended; the first estimator still said 18 s."""
    clock = Clock()
    eta = Eta([Phase("base", 12), Phase("step_1", 12)], concurrency=16, prior_s_per_item=1.375, clock=clock)
    assert eta.remaining() == pytest.approx(24 * 1.375)
    eta.update("base", 0)
    clock.t = 298.0
    eta.update("base", 1)
    assert eta.remaining() == pytest.approx(23 * 298 / 12)


def test_a_prior_gives_an_estimate_before_anything_ran() -> None:
    clock = Clock()
    eta = Eta(
        [Phase("base", 0, ["games:easy"]), Phase("step_1", 48)], concurrency=16, prior_s_per_item=2.0, clock=clock
    )
    assert eta.remaining() == pytest.approx(96.0)  # the cached base costs nothing
    eta.update("step_1", 0)
    clock.t = 20.0
    assert eta.remaining() == pytest.approx(96.0)  # within the prior's promise
    clock.t = 64.0  # the first wave is late: 64/16 = 4 s per item at least
    assert eta.remaining() == pytest.approx(48 * 4.0)


def test_format_seconds() -> None:
    assert [format_seconds(s) for s in (None, 42.4, 185, 3725)] == ["unknown", "42s", "3m05s", "1h02m"]


def test_priors_from_earlier_evals_then_training(tmp_path: Path) -> None:
    cfg = Config.model_validate({"selfplay": {"plays": 8}})
    suite = GamesSuite("games:easy", load_seeds("easy"), episodes=2)
    assert prior_seconds_per_item([suite], {}, None) == (None, "no earlier measurement")
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"n_envs": 6, "time_play_s": 96.0})
        + "\n"
        + json.dumps({"n_envs": 6, "time_play_s": 48.0})
        + "\nnot json\n"
    )
    rate = training_seconds_per_episode(tmp_path, cfg)
    assert rate == pytest.approx((2.0 + 1.0) / 2)
    assert prior_seconds_per_item([suite], load_timing(tmp_path), rate) == (
        pytest.approx(1.5),
        "this run's training rollouts (rough)",
    )
    save_timing(tmp_path, {"games:easy": 0.75})
    save_timing(tmp_path, {"reasoning_gym": 0.5})  # merged, not replaced
    assert load_timing(tmp_path) == {"games:easy": 0.75, "reasoning_gym": 0.5}
    assert prior_seconds_per_item([suite], load_timing(tmp_path), rate) == (0.75, "this run folder's earlier evals")


def test_the_plan_names_suites_models_cache_and_cost() -> None:
    cfg = Config.model_validate(
        {
            "engine": {"max_model_len": 512, "agent": {"max_new_tokens": 16}},
            "selfplay": {"max_turns": 10, "max_context_tokens": 1024},
        }
    )
    suite = GamesSuite("games:easy", load_seeds("easy"), episodes=8)
    line = suite_line(suite, len(suite.items()), cfg)
    assert line.startswith("games:easy: 6 games x 8 episodes = 48 items (test seeds)")
    assert "at most 10 turns x 16 tokens" in line and "stops at 512 tokens" in line  # the engine's limit wins
    lines = plan_lines(
        [line],
        [Phase("base", 0, ["games:easy"]), Phase("step_1", 48)],
        concurrency=16,
        eta_s=96.0,
        rate_source="this run folder's earlier evals",
        cache_note="base scores cached in X",
    )
    text = "\n".join(lines)
    assert "base    0 items to score; cached: games:easy" in text
    assert "step_1  48 items to score" in text
    assert "estimated time: 1m36s for 48 items (this run folder's earlier evals)" in text


class _PluginSuite:
    """A third-party suite with only what :class:`Suite` requires (no cache fingerprint, no
    environments, no answer limit): the plan and the base cache must still handle it."""

    name = "plugin"
    metrics = ("score", "solved")
    needs_sandbox = False

    def items(self) -> list[EvalItem]:
        return [EvalItem("t", "k", None)]

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        return ItemScore(0.0, False)


class _AnswerPlugin(_PluginSuite):
    max_new_tokens = 64


def test_the_optional_suite_protocols_name_what_the_plan_and_cache_use() -> None:
    cfg = Config()
    games = GamesSuite("games:easy", load_seeds("easy"), episodes=2)
    assert isinstance(games, Suite) and isinstance(games, EpisodeSuite) and isinstance(games, CacheableSuite)
    key = base_key(cfg, games, games.items(), 512)
    assert key is not None and key["fingerprint"] == games.cache_fingerprint()
    plugin = _PluginSuite()
    assert isinstance(plugin, Suite)
    assert not isinstance(plugin, EpisodeSuite | CacheableSuite | AnswerSuite)
    assert base_key(cfg, plugin, plugin.items(), 512) is None  # not cacheable: scored every time
    assert suite_line(plugin, 1, cfg) == "plugin: 1 items"
    assert suite_line(_AnswerPlugin(), 1, cfg) == "plugin: 1 items; an answer is at most 64 tokens"
