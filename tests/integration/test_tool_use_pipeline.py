"""The pipeline in the tool-use domain with a scripted designer and agent (real sandbox, real SQLite).

The scripted designer writes a vault environment (admitted) or one whose first instruction
already holds at reset (rejected with that reason). The scripted agent calls ``unlock`` on the
lock the latest instruction names, with the code from the hint when it has one, else a guess:
so the admitted environment's hint regret is real and positive.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sqlite3
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner

pytestmark = pytest.mark.anyio

VAULT_ENV = """SKILL = "Logical Deduction"
HINT = "Every lock opens with code 7."
DESCRIPTION = "Open three locks of a vault, one instruction at a time."


class Vault(ToolUseEnv):
    max_turns = 3
    tools = [{"type": "function", "function": {
        "name": "unlock", "description": "Try a code on a lock.",
        "parameters": {"type": "object", "properties": {"lock": {"type": "integer"}, "code": {"type": "integer"}},
                       "required": ["lock", "code"]}}}]

    def initial_state(self):
        return {"open": []}

    def instructions(self):
        return [f"Open lock {i}." for i in (1, 2, 3)]

    def check(self, index):
        return index + 1 in self.state["open"]

    def unlock(self, lock, code):
        if code != 7:
            return "Wrong code."
        self.state["open"].append(lock)
        return f"Lock {lock} is open."

    def solution(self):
        return [self.call("unlock", lock=i, code=7) for i in (1, 2, 3)]
"""

MET_AT_RESET = VAULT_ENV.replace("class Vault", "class OpenVault").replace(
    'return {"open": []}', 'return {"open": [1]}'
)


def vault_agent(prompt: str, rng: random.Random) -> str:
    locks = re.findall(r"Open lock (\d)", prompt)
    lock = int(locks[-1]) if locks else 1
    code = 7 if "Every lock opens with code 7." in prompt else rng.choice([7, 3])
    return f'<tool_call>\n{{"name": "unlock", "arguments": {{"lock": {lock}, "code": {code}}}}}\n</tool_call>'


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_tool_use_designs_are_validated_played_and_scored(tmp_path: Path) -> None:
    cfg = Config.model_validate(
        {
            "run": {"run_dir": str(tmp_path / "run"), "max_steps": 2, "checkpoint_every": 2, "device": "cpu"},
            "selfplay": {
                "domain": "tool_use",
                "mode": "spade",
                "envs_per_step": 2,
                "plays": 6,
                "hinted_plays": 6,
                "regen_every": 2,
                "skills_per_regen": 1,
                "max_turns": 3,
                "repair_turns": 0,
                "mutation_fraction": 0.0,
            },
            "memory": {"examples_shown": 1, "embed_model": "hashing", "seed_tier": "easy"},
            "sandbox": {"call_timeout_s": 2.0, "max_children": 16},
            "engine": {
                "designer": {"max_new_tokens": 4096},
                "agent": {"max_new_tokens": 256},
            },  # the scripted "tokenizer" is one token per character
        }
    )
    designs = itertools.cycle([VAULT_ENV, MET_AT_RESET])
    prompts: list[str] = []

    def designer(prompt: str, rng: random.Random) -> str:
        prompts.append(prompt)
        return f"```python\n{next(designs)}```"

    engine = ScriptedEngine(policies={"designer": designer, "agent": vault_agent})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 2
    db = tmp_path / "run" / "run.sqlite"
    # The designer was asked for a tool-use environment, grounded on a document, with a tool-use seed as example.
    assert "tool-use environments" in prompts[0] and "ToolUseEnv" in prompts[0] and "self.call(" in prompts[0]
    # The seeds in memory are the tool-use ones.
    seeds = rows(db, "SELECT doc_title, domain FROM environments WHERE origin = 'seed'")
    assert {d for _, d in seeds} == {"tool_use"} and {"press_button", "room_lights", "todo_list"} <= {
        t for t, _ in seeds
    }
    # The vault was admitted; the other one rejected because an instruction held at reset.
    vault = rows(
        db, "SELECT valid, domain, win_rate, hint_win_rate, regret FROM environments WHERE code LIKE '%class Vault%'"
    )
    assert vault and vault[0][:2] == (1, "tool_use"), rows(
        db, "SELECT reasons FROM environments WHERE code LIKE '%class Vault%'"
    )
    rejected = rows(db, "SELECT valid, reasons FROM environments WHERE code LIKE '%class OpenVault%'")
    assert rejected and rejected[0][0] == 0
    assert any("instruction 1 ('Open lock 1.') is already satisfied at reset" in r for r in json.loads(rejected[0][1]))
    # Played and scored: hinted plays open every lock, plain ones guess, so regret is positive.
    _, _, w, w_hint, regret = vault[0]
    assert w_hint == 1.0 and w < w_hint and regret > 0
    steps = rows(db, "SELECT metrics FROM steps ORDER BY step")
    first = json.loads(steps[0][0])
    assert first["valid_fraction"] == 0.5 and first["regret_mean"] > 0
    outcomes = rows(db, "SELECT DISTINCT outcome FROM episodes WHERE hinted = 0")
    assert {round(o, 4) for (o,) in outcomes} - {0.0, 0.3333, 0.6667, 1.0, -0.1} == set()  # fractions of 3 instructions
