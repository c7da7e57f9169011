"""Issue 22, classes 1, 2, 4 and 6: what one environment sends is bounded by the controller,
handling it can end only that environment, its rewards cannot become wins, work on its output
is linear and capped, and what is stored of its plays is capped.

Every positive control acts only on data or processes this test created.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from spade_async.admission.validate import MAX_REASONS, _Validator, validate_source
from spade_async.config import SandboxConfig
from spade_async.engine.base import Sampling
from spade_async.envs.tool_schemas import MAX_TOOLS, ToolBox
from spade_async.memory.records import EnvRecord, EpisodeRecord
from spade_async.memory.store import Store
from spade_async.sandbox.child.worker import check_nesting
from spade_async.sandbox.errors import EnvProtocolError, RewardOutOfRange
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.designer import _repair_prompt
from spade_async.selfplay.play.agent import (
    MAX_STORED_EPISODE_CHARS,
    MAX_STORED_TURN_CHARS,
    play_episode,
)
from spade_async.selfplay.play.tool_agent import play_tool_episode
from spade_async.testing import ScriptedEngine
from tests.sandbox.conftest import alive, assert_serves, hostile

pytestmark = pytest.mark.anyio

SAMPLING = Sampling(max_new_tokens=64)


class _Hidden(dict):  # the trick of tests/fixtures/hostile/hidden_info.py, built here for the control
    def values(self) -> Any:
        return []

    def items(self) -> Any:
        return []


def test_positive_control_the_childs_own_check_misses_hidden_children() -> None:
    info: dict[str, Any] = {}
    for _ in range(900):
        info = {"a": info}
    check_nesting(_Hidden(a=info), "info")  # passes: only the controller's check can stop it


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("deep", "more than 32 levels deep"),
        ("wide", "more than 10000 lists/dicts"),
        ("long", "string of 300000 characters"),
    ],
)
async def test_hidden_info_is_refused_by_the_controller(pool: SandboxPool, action: str, message: str) -> None:
    env = await pool.open(hostile("hidden_info"))
    await env.reset(0)
    assert (await env.step("plain")).obs == "plain"
    with pytest.raises(EnvProtocolError, match=message):
        await env.step(action)
    assert not alive(env.pid)
    await assert_serves(pool)


# -- class 4: out-of-range rewards --------------------------------------------------------------


@pytest.mark.parametrize("reward", ["1e308", "-5", "1.5"])
async def test_out_of_range_reward_is_an_env_error(pool: SandboxPool, reward: str) -> None:
    env = await pool.open(hostile("huge_reward"))
    await env.reset(0)
    with pytest.raises(RewardOutOfRange, match=r"must lie in \[0, 1\]"):
        await env.step(reward)
    assert not alive(env.pid)
    await assert_serves(pool)


async def test_out_of_range_reward_is_not_a_win_in_play(pool: SandboxPool) -> None:
    engine = ScriptedEngine(policies={"agent": lambda p, r: "\\boxed{1e308}"})
    episode = await play_episode(
        engine,
        pool,
        env_id="e",
        source=hostile("huge_reward"),
        seed=3,
        hint=None,
        sampling=SAMPLING,
        max_turns=3,
        max_context_tokens=4000,
        no_action_penalty=-0.5,
    )
    assert episode.error is not None and "RewardOutOfRange" in episode.error
    assert episode.outcome != 1.0
    in_range = ScriptedEngine(policies={"agent": lambda p, r: "\\boxed{1}"})  # control: 1.0 is a real win
    won = await play_episode(
        in_range,
        pool,
        env_id="e",
        source=hostile("huge_reward"),
        seed=3,
        hint=None,
        sampling=SAMPLING,
        max_turns=3,
        max_context_tokens=4000,
        no_action_penalty=-0.5,
    )
    assert won.error is None and won.outcome == 1.0


# -- class 1: any exception on one environment's data ends that environment only ----------------

TOOL_ENV = """
class Vault(ToolUseEnv):
    max_turns = 3
    tools = [{"type": "function", "function": {"name": "unlock", "description": "Try a code on a lock.",
              "parameters": {"type": "object", "properties": {"lock": {"type": "integer"}}, "required": ["lock"]}}}]

    def initial_state(self):
        return {"open": []}

    def instructions(self):
        return [f"Open lock {i}." for i in (1, 2, 3)]

    def check(self, index):
        return index + 1 in self.state["open"]

    def unlock(self, lock):
        self.state["open"].append(lock)
        return "open"
"""

HIDDEN_DEEP_TOOLS = (
    TOOL_ENV.replace(
        "class Vault",
        """class Hidden(dict):
    def values(self):
        return []

    def items(self):
        return []


class Vault""",
    )
    + """
    def reset(self, seed=None):
        obs, info = super().reset(seed)
        deep = {"type": "object"}
        for _ in range(450):
            deep = {"type": "object", "properties": {"x": deep}}
        info["tools"][0]["function"]["parameters"] = deep
        return obs, Hidden(info)
"""
)


class TemplateEngine(ScriptedEngine):
    """Renders tools recursively, two frames per level, as a Jinja chat template does."""

    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        text = super().chat_text(messages, add_generation_prompt, enable_thinking)
        return text if tools is None else _render(tools) + text


def _render(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(_render_pair(k, v) for k, v in dict.items(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value) + "]"
    return json.dumps(value)


def _render_pair(key: str, value: Any) -> str:
    return json.dumps(key) + ":" + _render(value)


async def test_deep_tool_schema_ends_only_its_episode(pool: SandboxPool) -> None:
    engine = TemplateEngine(policies={"agent": lambda p, r: "no call"})
    episode = await play_tool_episode(
        engine,
        pool,
        env_id="e",
        source=HIDDEN_DEEP_TOOLS,
        seed=3,
        hint=None,
        sampling=SAMPLING,
        max_turns=2,
        max_context_tokens=100_000,
        no_action_penalty=-0.5,
    )
    assert episode.error is not None and "out of bounds" in episode.error
    await assert_serves(pool)


class BrokenTemplateEngine(ScriptedEngine):
    def chat_text(
        self,
        messages: list[dict[str, str]],
        add_generation_prompt: bool = True,
        enable_thinking: bool | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        if tools is not None:
            raise RecursionError("maximum recursion depth exceeded while rendering the template")
        return super().chat_text(messages, add_generation_prompt, enable_thinking)


async def test_any_exception_on_env_data_ends_that_episode_only(pool: SandboxPool) -> None:
    episode = await play_tool_episode(
        BrokenTemplateEngine(),
        pool,
        env_id="e",
        source=TOOL_ENV,
        seed=3,
        hint=None,
        sampling=SAMPLING,
        max_turns=2,
        max_context_tokens=100_000,
        no_action_penalty=-0.5,
    )
    assert episode.error is not None and episode.error.startswith("EnvDataError: ")
    assert "RecursionError" in episode.error
    await assert_serves(pool)


class DownEngine(ScriptedEngine):
    async def generate(self, requests: list[Any]) -> list[Any]:
        raise RuntimeError("engine down")


async def test_engine_failures_still_propagate(pool: SandboxPool) -> None:
    with pytest.raises(RuntimeError, match="engine down"):
        await play_episode(
            DownEngine(),
            pool,
            env_id="e",
            source=hostile("huge_reward"),
            seed=3,
            hint=None,
            sampling=SAMPLING,
            max_turns=2,
            max_context_tokens=4000,
            no_action_penalty=-0.5,
        )
    with pytest.raises(RuntimeError, match="engine down"):
        await play_tool_episode(
            DownEngine(),
            pool,
            env_id="e",
            source=TOOL_ENV,
            seed=3,
            hint=None,
            sampling=SAMPLING,
            max_turns=2,
            max_context_tokens=100_000,
            no_action_penalty=-0.5,
        )


# -- class 2: work on environment output is linear and capped -----------------------------------


def test_repair_prompt_renders_a_bounded_number_of_times() -> None:
    engine = ScriptedEngine()
    reasons = [f"reason {i}: " + "x" * 200 for i in range(900)] + ["reason 1: " + "x" * 200] * 5000
    ids = _repair_prompt(engine, "class E: pass", reasons, 3000, None)
    assert ids is not None and len(ids) <= 3000
    assert len(engine.chats) <= 6, len(engine.chats)  # today: one render per dropped reason (900)
    assert "reason 0:" in engine.decode(ids)


def test_validator_reasons_are_deduplicated_and_capped() -> None:
    pool = SimpleNamespace(cfg=SandboxConfig())  # the validator reads only the latency budget here
    validator = _Validator(pool, "", 1, (0,), random.Random(0))  # type: ignore[arg-type]
    for i in range(5000):
        validator.fail("tool_backed", f"tool 't{i}' has no method")
        validator.fail("tool_backed", "the same reason every time")
    result = validator.result()
    assert len(result.reasons) == MAX_REASONS + 1 and result.reasons[-1].startswith("... and 4981 more")
    assert result.reasons.count("the same reason every time") == 1
    assert result.checks == {"tool_backed": False}


MANY_TOOLS_LATER = (
    TOOL_ENV
    + """
    def solution(self):
        return [self.call("unlock", lock=i) for i in (1, 2, 3)]

    def reset(self, seed=None):
        obs, info = super().reset(seed)
        if seed is not None and seed % 2:  # odd seeds: a valid first reset hides the rest
            info["tools"] += [{"type": "function", "function": {"name": f"t{i}", "description": "d"}}
                              for i in range(1500)]
        return obs, info
"""
)


async def test_tool_contract_is_checked_at_every_reset(pool: SandboxPool) -> None:
    result = await validate_source(pool, MANY_TOOLS_LATER, seeds=(0, 1), domain="tool_use")
    assert not result.admitted
    assert result.checks["tool_schemas"] is False
    assert any("1501 tools declared" in r for r in result.reasons), result.reasons
    assert (await validate_source(pool, MANY_TOOLS_LATER, seeds=(0, 2), domain="tool_use")).admitted  # control


async def test_many_tools_at_play_end_the_episode_without_building_them(pool: SandboxPool) -> None:
    engine = ScriptedEngine(policies={"agent": lambda p, r: "no call"})
    episode = await play_tool_episode(
        engine,
        pool,
        env_id="e",
        source=MANY_TOOLS_LATER,
        seed=3,
        hint=None,
        sampling=SAMPLING,
        max_turns=2,
        max_context_tokens=100_000,
        no_action_penalty=-0.5,
    )
    assert episode.error is not None and "tool contract" in episode.error
    box = ToolBox([{"type": "function", "function": {"name": f"t{i}"}} for i in range(5000)])
    assert box.problems and not box.names and not box._validators  # refused before any tool is looked at
    assert len(ToolBox([{"name": "ok", "description": "d"}] * MAX_TOOLS).names) == 1


# -- class 6: what is stored of a play is capped -------------------------------------------------

HUGE_OBS = """
class Big:
    def reset(self, seed=None):
        self.turn = 0
        return "o" * 400_000, {}

    def step(self, action):
        self.turn += 1
        return "p" * 400_000, 0.0, self.turn >= 3, False, {}
"""


def _db_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("run.sqlite*"))


async def test_stored_transcript_is_capped(pool: SandboxPool, tmp_path: Path) -> None:
    engine = ScriptedEngine(policies={"agent": lambda p, r: "\\boxed{go}"})
    episode = await play_episode(
        engine,
        pool,
        env_id="e",
        source=HUGE_OBS,
        seed=0,
        hint="h" * 100_000,
        sampling=SAMPLING,
        max_turns=3,
        max_context_tokens=10_000_000,
        no_action_penalty=-0.5,
    )
    assert episode.error is None and episode.turns == 3
    assert len(episode.input_ids) > 1_200_000  # the agent saw every observation whole
    texts = [turn["text"] for turn in episode.transcript]
    assert all(len(t) <= MAX_STORED_TURN_CHARS + 60 for t in texts)
    assert sum(len(t) for t in texts) <= MAX_STORED_EPISODE_CHARS + 60 * len(texts)
    assert "more characters not stored" in texts[1] and episode.transcript[0]["role"] == "hint"
    async with await Store.open(tmp_path / "run.sqlite") as store:
        await store.start_run("t", "", None)
        env_id = await store.record_environment(
            EnvRecord(code=HUGE_OBS, domain="games", skill="s", origin="fresh", created_step=0)
        )
        before = _db_bytes(tmp_path)
        for i in range(10):
            await store.record_episodes(
                [
                    EpisodeRecord(
                        step=i,
                        env_id=env_id,
                        adapter_version=0,
                        hinted=False,
                        outcome=0.0,
                        turns=3,
                        transcript=episode.transcript,
                    )
                ]
            )
    grown = _db_bytes(tmp_path) - before
    assert grown < 10 * 64 * 1024, grown  # today: about 1.6 MB per play
