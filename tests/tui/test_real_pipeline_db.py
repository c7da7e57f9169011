"""The TUI on a database written by the real pipeline, and the metric-key contract between them.

The contract is ``spade_async.memory.schema.METRIC_KEYS``: every key the TUI reads is in it,
and every key in it is written by the pipeline (with the real learner's keys), so no plot or
header field can silently stay empty because a name drifted on one side.
"""

from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path

import pytest

from spade_async.memory.schema import CLUSTER_METRIC_KEYS, METRIC_KEYS, PROBE_METRIC_KEYS
from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, make_config
from tests.tui.helpers import legend_value, make_app, settle, text_of
from tui.app import CHARTS
from tui.reader import RunReader
from tui.stats import BANDS

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def tui_metric_keys() -> set[str]:
    """Metric keys the TUI reads: the charts, the band histogram, and ``latest(steps, "key")`` calls."""
    keys = {key for _, lines in CHARTS for _, key, _ in lines} | {key for key, _ in BANDS}
    for path in (ROOT / "tui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("latest", "points"):
                keys |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return keys


@pytest.fixture
async def pipeline_db(tmp_path: Path) -> Path:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
    engine = ScriptedEngine(policies={"designer": alternating_designer()})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        await pipeline.run(sync=True)
    return tmp_path / "run" / "run.sqlite"


def test_every_key_the_tui_reads_is_in_the_contract() -> None:
    keys = tui_metric_keys()
    assert "tokens_per_s" in keys and "regret_mean" in keys  # the scan finds the header's reads
    contract = set(METRIC_KEYS) | set(CLUSTER_METRIC_KEYS) | set(PROBE_METRIC_KEYS)
    assert keys <= contract, keys - contract


async def test_the_pipeline_writes_every_contract_key(pipeline_db: Path, tiny_model_dir: Path) -> None:
    from spade_async.config import LearnerConfig, ModelConfig
    from spade_async.learner.trainer import Trainer

    with sqlite3.connect(pipeline_db) as conn:
        written = set().union(*(json.loads(m) for (m,) in conn.execute("SELECT metrics FROM steps")))
    learner_keys = set(Trainer(str(tiny_model_dir), ModelConfig(), LearnerConfig(), device="cpu").train_step([]))
    assert set(METRIC_KEYS) <= written | learner_keys, set(METRIC_KEYS) - written - learner_keys


async def test_tui_shows_a_run_written_by_the_real_pipeline(pipeline_db: Path) -> None:
    polled = RunReader(pipeline_db).poll()
    assert polled.waiting is None and polled.run is not None
    assert [s.step for s in polled.steps] == [0, 1, 2, 3]
    app = make_app(pipeline_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        header = text_of(app.query_one("#header"))
        assert "step 4" in header and "adapter v4" in header and "valid 50%" in header
        assert "cluster" not in header  # a run on one box records no cluster metrics
        measured = [s.metrics.get("regret_mean") for s in polled.steps]
        regret = [r for r in measured if r is not None and r == r][-1]  # the newest measured value
        assert legend_value(app, "#chart-regret", "mean regret") == f"{regret:.3f}"
        plain = polled.steps[-1].metrics["plain_return_mean"]
        assert legend_value(app, "#chart-regret", "plain-arm return") == f"{plain:.3f}"
