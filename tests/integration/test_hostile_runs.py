"""Issue 22: a hostile environment in a real run ends only itself (games and tool use, SPADE
mode where the designer writes it, and a fixed pool that holds it).

The hostile environments behave at seeds 0 and 1 and turn hostile at every other seed: the
game answers with a reward of 1e308 (odd seeds) or a win whose ``info`` is 900 levels deep,
hidden from the child's own check by a ``dict`` subclass (even seeds); the tool-use one
declares a tool schema 450 levels deep (as deep for a recursive chat template). Play seeds
and admission's seeds are both drawn over ``[0, 2**31)``, so neither is ever 0 or 1 in
practice. Each run must finish all its steps, the benign environment must be played and
scored, and the hostile one must never count as a win. Each case asserts one definite path:

- fixed pool (never admission-checked): every play of it ends as its error ("failed during
  play", bounds or reward range), visibly, and none is stored;
- SPADE mode: the designer's copy is rejected by admission with the reason and its design is
  scored invalid; the seed copy (the pool folder is the seed set, and seeds are not checked)
  reaches play from memory and every play of it ends as its error, as in the fixed pool.

The engine renders tools recursively, as a Jinja chat template does.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from spade_async.config import Config
from spade_async.run.assemble import open_run
from spade_async.selfplay.curriculum import Retired
from spade_async.testing import COIN_ENV, ScriptedLearner
from tests.integration.test_tool_use_pipeline import VAULT_ENV, vault_agent
from tests.sandbox.test_hostile_controller import (
    TemplateEngine,  # renders tools recursively, like Jinja
)

pytestmark = pytest.mark.anyio

HIDDEN = """

class Hidden(dict):
    def values(self):
        return []

    def items(self):
        return []
"""

HOSTILE_GAME = (
    COIN_ENV.replace("class WeightedCoin(GameEnv):", "class HostileCoin(GameEnv):")
    + HIDDEN
    + """

_step = HostileCoin.step


def _hostile_step(self, action):
    obs, reward, terminated, truncated, info = _step(self, action)
    if self.seed_seen in (0, 1):
        return obs, reward, terminated, truncated, info
    if self.seed_seen % 2:
        return "You win!", 1e308, True, False, info
    deep = {}
    for _ in range(900):
        deep = {"a": deep}
    return "You win!", 1.0, True, False, Hidden(a=deep)


_reset = HostileCoin.reset


def _remember_seed(self, seed=None):
    self.seed_seen = seed
    return _reset(self, seed)


HostileCoin.step = _hostile_step
HostileCoin.reset = _remember_seed
"""
)

HOSTILE_TOOLS = (
    VAULT_ENV.replace("class Vault(ToolUseEnv):", "class HostileVault(ToolUseEnv):")
    + HIDDEN
    + """

_reset = HostileVault.reset


def _hostile_reset(self, seed=None):
    obs, info = _reset(self, seed)
    if seed in (0, 1):
        return obs, info
    deep = {"type": "object"}
    for _ in range(450):
        deep = {"type": "object", "properties": {"x": deep}}
    info["tools"][0]["function"]["parameters"] = deep
    return obs, Hidden(info)


HostileVault.reset = _hostile_reset
"""
)


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def config(tmp_path: Path, domain: str, mode: str, pool: dict[str, str]) -> Config:
    folder = tmp_path / "pool"
    folder.mkdir()
    for name, source in pool.items():
        (folder / f"{name}.py").write_text(source)
    return Config.model_validate(
        {
            "run": {
                "run_dir": str(tmp_path / "run"),
                "max_steps": 2,
                "checkpoint_every": 2,
                "device": "cpu",
                "seed": 7,
            },  # play seeds are then never the admission seeds 0 and 1
            "selfplay": {
                "domain": domain,
                "mode": mode,
                "envs_per_step": 2,
                "plays": 3,
                "hinted_plays": 2,
                "regen_every": 2,
                "skills_per_regen": 1,
                "max_turns": 3,
                "repair_turns": 0,
                "mutation_fraction": 0.0,
                "fixed_pool": str(folder),
                "max_off_policy_steps": 1,
            },
            "memory": {"examples_shown": 1, "embed_model": "hashing", "seed_tier": "easy"},
            "sandbox": {"call_timeout_s": 2.0, "max_children": 16},
            "engine": {"designer": {"max_new_tokens": 8192}, "agent": {"max_new_tokens": 256}},
        }
    )


CASES = {
    "games": (COIN_ENV, HOSTILE_GAME, "HostileCoin", "WeightedCoin"),
    "tool_use": (VAULT_ENV, HOSTILE_TOOLS, "HostileVault", "class Vault("),
}


def agent(domain: str) -> Any:
    return vault_agent if domain == "tool_use" else (lambda prompt, rng: "\\boxed{heads}")


PLAY_FAILURE = ("out of bounds", "RewardOutOfRange")
"""What ends each play of the hostile environment: the controller's bounds or its reward range."""
ADMISSION_FAILURE = ("out of bounds", "rewards must lie in [0, 1]")
"""The same two, as admission words them in its reasons."""


def assert_every_play_ended_as_its_error(db: Path, env_id: str, domain: str, plays: int) -> None:
    """Each play of ``env_id`` was ended by the controller as that environment's error, visibly."""
    failed = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'error'")]
    assert failed and all(m.startswith(f"env {env_id[:12]} failed during play") for m in failed), failed
    assert all(any(why in m for why in PLAY_FAILURE) for m in failed), failed
    assert len(failed) == plays, failed  # every play of it, none dropped without a word
    if domain == "games":  # odd seeds send 1e308, even ones a hidden 900-deep info
        assert any("out of bounds" in m for m in failed) and any("RewardOutOfRange" in m for m in failed), failed
    assert rows(db, f"SELECT count(*) FROM episodes WHERE env_id = '{env_id}'") == [(0,)]


@pytest.mark.parametrize("mode", ["spade", "fixed"])
@pytest.mark.parametrize("domain", ["games", "tool_use"])
async def test_hostile_env_ends_only_itself(tmp_path: Path, domain: str, mode: str) -> None:
    """Fixed pool: the hostile env is played, and the bounds end each play as its error.

    SPADE mode: the designer writes the hostile env, and admission (seeds drawn per check, so
    never the 0 and 1 it behaves at) rejects it with the reason, and its design is scored
    invalid. The pool folder (the seeds in SPADE mode) holds only the hostile env, and seeds
    are not admission-checked, so memory fills the second live slot with it: then it reaches
    play, and the bounds end each play as in the fixed pool.
    """
    benign, hostile, hostile_name, benign_name = CASES[domain]
    folder = {"a_benign": benign, "b_hostile": hostile} if mode == "fixed" else {"b_hostile": hostile}
    cfg = config(tmp_path, domain, mode, folder)
    # The designed hostile env differs from the seed's code (else it is refused as a copy of memory).
    designs = itertools.cycle([benign, hostile + "\nDESIGNED = True\n"])
    engine = TemplateEngine(
        policies={"designer": lambda p, r: f"```python\n{next(designs)}```", "agent": agent(domain)}
    )
    retirements: list[Retired] = []  # every generation's scoring, the last one's at the end of the run too
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        retire = pipeline.curriculum.retire

        def scored_retire() -> Retired:
            retirements.append(retire())
            return retirements[-1]

        pipeline.curriculum.retire = scored_retire  # type: ignore[method-assign]
        assert await pipeline.run(sync=True) == 2  # the run finished its steps
    db = tmp_path / "run" / "run.sqlite"
    envs = rows(db, "SELECT id, origin, valid, status, reasons, code FROM environments")
    hostile_rows = [r for r in envs if hostile_name in r[5]]
    benign_ids = {r[0] for r in envs if benign_name in r[5] and hostile_name not in r[5]}
    played = {i for (i,) in rows(db, "SELECT DISTINCT env_id FROM episodes")}
    assert played & benign_ids, "the benign environment was played and scored"
    sp = cfg.selfplay
    # Live both steps; hinted plays only at the step it went live (selfplay.hinted_schedule).
    plays = 2 * sp.plays + sp.hinted_plays
    assert not rows(db, "SELECT message FROM events WHERE message LIKE '%play audit%'")  # not the audit's catch
    if mode == "fixed":
        ((hostile_id, origin, _, _, _, _),) = hostile_rows
        assert origin == "seed" and not rows(db, "SELECT message FROM events WHERE kind = 'rejected'")
        assert_every_play_ended_as_its_error(db, hostile_id, domain, plays)
        return
    designed = [r for r in hostile_rows if r[1] != "seed"]
    ((seed_id, *_),) = [r for r in hostile_rows if r[1] == "seed"]
    # The designed copy: rejected by admission, with the reason, stored as invalid, never played.
    assert len(designed) == 1, hostile_rows
    ((design_id, _, valid, status, reasons, _),) = designed
    assert (valid, status) == (0, "invalid")
    assert any(why in reason for reason in json.loads(reasons) for why in ADMISSION_FAILURE), reasons
    rejected = [m for (m,) in rows(db, "SELECT message FROM events WHERE kind = 'rejected'")]
    assert len(rejected) == 1 and any(why in rejected[0] for why in ADMISSION_FAILURE), rejected
    assert design_id not in played
    # ... and its design earns the invalid-design penalty when its generation retires (scored once:
    # at the regeneration, or at the end of the run for the last generation).
    (scored,) = [s for r in retirements for s in r.scored if hostile_name in (s.design.code or "")]
    assert scored.env_id is None and not scored.candidate.valid and not scored.design.copied
    assert scored.design.reasons == json.loads(reasons)
    assert not pipeline.curriculum.rejected and retirements  # none left unscored
    # The unchecked seed copy went live from memory; the bounds ended each of its plays.
    assert_every_play_ended_as_its_error(db, seed_id, domain, plays)
