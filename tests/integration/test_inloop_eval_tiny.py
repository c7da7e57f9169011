"""In-loop evaluation for real: the tiny random model (HF engine, LoRA trainer), the real
sandbox and SQLite, two steps with ``eval.every = 1``, overlapped as a run is by default."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from spade_async.config import load_config
from spade_async.eval.inloop import BASE_FILE
from spade_async.run.assemble import open_run
from tests.e2e.test_kill_resume import LOTTERY, overrides

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


async def test_tiny_model_run_scores_base_then_live_adapters(tmp_path: Path, tiny_model_dir: Path) -> None:
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "lottery.py").write_text(LOTTERY)
    sets = [
        *overrides(tmp_path / "run", pool, tiny_model_dir)[1::2],
        "run.max_steps=2",
        "eval.every=1",
        f'eval.suite="envs:{pool}"',
        "eval.episodes=2",
        "eval.concurrency=2",
    ]
    cfg = load_config(ROOT / "configs" / "tiny.toml", sets)
    lines: list[str] = []
    async with open_run(cfg, report=lines.append) as p:
        assert await p.run() == 2
        evaluated, skipped = list(p.loop_eval.evaluated), p.loop_eval.skipped
    assert evaluated[:1] == [0] and len(evaluated) + skipped == 2
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as conn:
        found = conn.execute(
            "SELECT eval_id, step, model, adapter, n, n_errors, mean, base_mean, delta FROM evals "
            "WHERE task = '*' AND metric = 'return' ORDER BY id"
        ).fetchall()
        live = dict(conn.execute("SELECT step, adapter_version FROM steps").fetchall())
    base, *loop = found
    # The lottery never crashes: every episode is scored (an errored one would leave the means
    # of fewer plays, or none, and the delta below unchecked).
    assert base[:6] == ("loop-base", None, "base", None, 2, 0)
    assert [row[1] for row in loop] == evaluated
    for eval_id, step, model, adapter, n, n_errors, mean, base_mean, delta in loop:
        assert (eval_id, model, n, n_errors) == (f"loop-step-{step + 1}", "loop", 2, 0)  # named from 1
        low = int(re.fullmatch(r"v(\d+)(?:-v\d+)?", adapter).group(1))  # type: ignore[union-attr]
        assert low >= live[step]  # the versions the episodes were actually played with
        assert delta == pytest.approx(mean - base_mean)
    assert (tmp_path / "run" / BASE_FILE).is_file()
    assert sum(line.startswith("eval ") for line in lines) == 1 + len(evaluated)
