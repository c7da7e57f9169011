"""A small, fully known run database for the TUI tests.

Why build it from ``MIGRATIONS`` with stdlib sqlite3: the fixture then has exactly the
schema real runs have, and the tests need nothing from the (async) store.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from spade_async.memory.schema import MIGRATIONS

T0 = 1_700_000_000.0  # run start; every time in the fixture is T0 + something
RUN_NAME = "fixture-run"
NOW = T0 + 3723.0  # the clock the tests inject: elapsed 1:02:03


def open_writer(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=0)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def env_id(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@dataclass(frozen=True)
class FixtureEnv:
    skill: str | None
    code: str
    hint: str
    doc_title: str
    created_step: int
    status: str
    valid: bool
    win_rate: float | None
    regret: float | None
    reasons: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return env_id(self.code)


COUNTER_CODE = '''class CounterGame:
    """Reach the target by adding 1 or 2."""

    def reset(self, seed=None):
        self.total = 0
        return "Total 0. Target 5. Add 1 or 2.", {}

    def step(self, action):
        self.total += int(action)
        done = self.total >= 5
        return f"Total {self.total}.", float(self.total == 5), done, False, {}
'''

ENVS: tuple[FixtureEnv, ...] = (
    FixtureEnv(
        "Mathematical Reasoning",
        COUNTER_CODE,
        "Always add 1 near the end.",
        "Integer sequences",
        0,
        "active",
        True,
        0.5,
        0.6,
    ),
    FixtureEnv(
        "Mathematical Reasoning",
        "class Primes:\n    pass\n",
        "Sieve first.",
        "Prime numbers",
        4,
        "active",
        True,
        0.9,
        0.2,
    ),
    FixtureEnv(
        "Logical Deduction",
        "class Knights:\n    pass\n",
        "Knights never lie.",
        "Logic puzzles",
        8,
        "active",
        True,
        0.3,
        0.8,
    ),
    FixtureEnv(
        "Logical Deduction",
        "class Broken:\n    def reset(self):\n",
        "—",
        "Syllogisms",
        11,
        "invalid",
        False,
        None,
        None,
        ("SyntaxError: expected an indented block", "no step()"),
    ),
    FixtureEnv(
        "Spatial Reasoning",
        "class Maze:\n    pass\n",
        "Hug the left wall.",
        "Mazes",
        11,
        "active",
        True,
        0.1,
        0.0,
    ),
)
COUNTER = ENVS[0]

PLAIN_TRANSCRIPT = [
    {"role": "observation", "text": "Total 0. Target 5. Add 1 or 2.", "reward": None},
    {"role": "agent", "text": "\\boxed{2}", "reward": None},
    {"role": "observation", "text": "Total 2.", "reward": 0.0},
    {"role": "agent", "text": "\\boxed{2}", "reward": None},
    {"role": "observation", "text": "Total 4.", "reward": 0.0},
    {"role": "agent", "text": "\\boxed{2}", "reward": None},
    {"role": "observation", "text": "Total 6.", "reward": 0.0},
]
HINTED_TRANSCRIPT = [
    {"role": "hint", "text": "Always add 1 near the end.", "reward": None},
    {"role": "observation", "text": "Total 0. Target 5. Add 1 or 2.", "reward": None},
    {"role": "agent", "text": "\\boxed{2}", "reward": None},
    {"role": "observation", "text": "Total 2.", "reward": 0.0},
    {"role": "agent", "text": "\\boxed{2}", "reward": None},
    {"role": "observation", "text": "Total 4.", "reward": 0.0},
    {"role": "agent", "text": "\\boxed{1}", "reward": None},
    {"role": "observation", "text": "Total 5. You win!", "reward": 1.0},
]


N_STEPS = 12
LAST_STEP = N_STEPS - 1


def step_metrics(step: int) -> dict[str, float]:
    """Metrics of fixture step ``step``: simple, distinct, known numbers (trends upward)."""
    last = step == LAST_STEP
    return {
        "adapter_version": step // 2,
        "valid_fraction": 0.8 if last else 0.75,
        "n_envs": 4,
        "plain_return_mean": round(0.05 * step, 3),
        "hint_return_mean": round(0.2 + 0.05 * step, 3),
        "regret_mean": round(0.1 + 0.05 * step, 3),
        "agent_return_mean": round(0.05 * step, 3),
        "learnable_fraction": round(step / 22, 3),
        "band_too_easy": 1,
        "band_in_band": 2 if last else 1,
        "band_too_hard": 1,
        "band_invalid": 1 if last else 0,
        "tokens_per_s": 123.4 if last else 100.0,
        "stale_dropped": step // 4,
        "loss": float("nan"),  # not measured: must not break plots
    }


EVENTS: tuple[tuple[int, str, str], ...] = (
    (5, "checkpoint", "checkpoint after step 6: checkpoints/step_6"),  # as launch.py words it (from 1)
    (11, "rejected", "Logical Deduction candidate: SyntaxError: expected an indented block"),
    (11, "stale_drop", "dropped 2 samples older than 1 adapter versions"),
)


EVALS: tuple[tuple[object, ...], ...] = (
    # step (the database's 0-based index), model (labelled from 1, as `eval --step 12`), suite, metric, n, ...
    (None, "base", "games", "win_rate", 288, 0.08, None, None, None, None),
    (11, "step_12", "games", "win_rate", 288, 0.14, 0.08, 0.06, 0.02, 0.10),
    (11, "step_12", "games", "return", 288, 0.21, 0.18, 0.03, -0.01, 0.07),
)


def build_fixture_db(path: Path, *, status: str = "running", n_steps: int = N_STEPS) -> Path:
    """Create the fixture run database at ``path`` (WAL mode) and return ``path``."""
    conn = open_writer(path)
    for _name, sql in MIGRATIONS:
        conn.executescript(sql)
    conn.execute(
        "INSERT INTO runs (id, name, config_toml, config_hash, created_at, status) "
        "VALUES (1, ?, '[run]\nmax_steps = 24\n', 'hash', ?, ?)",
        (RUN_NAME, T0, status),
    )
    for e in ENVS:
        insert_env(conn, e)
    for step in range(n_steps):
        insert_step(conn, step, step_metrics(step))
    for i, (step, kind, message) in enumerate(EVENTS):
        insert_event(conn, step, kind, message, created_at=T0 + 60.0 * (step + 1) + i)
    for hinted, transcript, outcome in ((0, PLAIN_TRANSCRIPT, 0.0), (1, HINTED_TRANSCRIPT, 1.0)):
        conn.execute(
            "INSERT INTO episodes (run_id, step, env_id, adapter_version, hinted, outcome, turns, "
            "truncated, transcript) VALUES (1, 11, ?, 5, ?, ?, 3, 0, ?)",
            (COUNTER.id, hinted, outcome, json.dumps(transcript)),
        )
    for row in EVALS:
        conn.execute(
            "INSERT INTO evals (run_id, eval_id, created_at, step, model, suite, task, metric, n, mean, base_mean, "
            "delta, ci_low, ci_high) VALUES (1, 'e1', ?, ?, ?, ?, '*', ?, ?, ?, ?, ?, ?, ?)",
            (T0 + 700.0, *row),
        )
    conn.commit()
    conn.close()
    return path


def insert_env(conn: sqlite3.Connection, e: FixtureEnv) -> None:
    conn.execute(
        "INSERT INTO environments (id, run_id, created_step, skill, domain, origin, code, hint, "
        "doc_title, doc_text, valid, reasons, status, win_rate, hint_win_rate, regret, n_plays, "
        "updated_step) VALUES (?, 1, ?, ?, 'games', 'fresh', ?, ?, ?, 'doc text', ?, ?, ?, ?, ?, "
        "?, ?, ?)",
        (
            e.id,
            e.created_step,
            e.skill,
            e.code,
            e.hint,
            e.doc_title,
            int(e.valid),
            json.dumps(list(e.reasons)),
            e.status,
            e.win_rate,
            None if e.win_rate is None else min(1.0, e.win_rate + 0.1),
            e.regret,
            0 if e.win_rate is None else 16,
            e.created_step,
        ),
    )


def insert_step(conn: sqlite3.Connection, step: int, metrics: dict[str, float]) -> None:
    conn.execute(
        "INSERT INTO steps (run_id, step, adapter_version, wall_s, metrics, created_at) VALUES (1, ?, ?, 60.0, ?, ?)",
        (
            step,
            int(metrics.get("adapter_version", step)),
            json.dumps(metrics),
            T0 + 60.0 * (step + 1),
        ),
    )


def insert_event(conn: sqlite3.Connection, step: int | None, kind: str, message: str, *, created_at: float) -> None:
    conn.execute(
        "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (1, ?, ?, ?, ?)",
        (step, kind, message, created_at),
    )
