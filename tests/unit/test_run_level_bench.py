"""benchmarks/run_level.py reads a run folder right: per-stage totals from metrics.jsonl and
run.sqlite, the trace of a run it started, the overlap of stages, the run/benchmark ratios;
and benchmarks/limits.py counts the model's GEMMs right. Synthetic run folders, no model,
nothing timed."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark scripts import their siblings by name

import run_level as rl  # noqa: E402


def _step(**m: Any) -> dict[str, Any]:
    return m


# Step 1 designs, plays and trains; step 2 plays and trains; step 3 plays, the learner had
# nothing to train on (no learner stats: tokens_per_s is the producer's generation rate there).
STEPS = [
    _step(step=1, time_design_s=30.0, time_play_s=10.0, time_learn_s=20.0, step_time_s=16.0, tokens_per_s=150.0),
    _step(step=2, time_design_s=0.001, time_play_s=12.0, time_learn_s=45.0, step_time_s=40.0, tokens_per_s=100.0),
    _step(step=3, time_design_s=0.001, time_play_s=8.0, time_learn_s=0.5, tokens_per_s=60.0, loss=None),
]


def _write_jsonl(run: Path, steps: list[dict[str, Any]], torn: bool = False) -> None:
    run.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(s) + "\n" for s in steps)
    (run / rl.METRICS_FILE).write_text(text + ('{"step": 4, "time_pl' if torn else ""))


def _write_db(run: Path, rows: list[tuple[int, dict[str, Any], float, float]]) -> None:
    """``steps`` rows as the run stores them: step from 0, metrics JSON, created_at, wall_s."""
    run.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(run / rl.DB_FILE)
    conn.execute(
        "CREATE TABLE steps (run_id INTEGER, step INTEGER NOT NULL, adapter_version INTEGER NOT NULL, "
        "wall_s REAL, metrics TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, step))"
    )
    for step, metrics, created, wall in rows:
        conn.execute("INSERT INTO steps VALUES (1, ?, 0, ?, ?, ?)", (step, wall, json.dumps(metrics), created))
    conn.commit()
    conn.close()


def test_stage_totals_from_metrics_jsonl(tmp_path: Path) -> None:
    _write_jsonl(tmp_path, STEPS, torn=True)
    rows, source = rl.read_steps(tmp_path)
    assert [r.step for r in rows] == [1, 2, 3]  # the torn last line is skipped
    assert source == "metrics.jsonl (no timestamps)"
    assert rows[2].num("loss") is None
    stages = rl.stage_totals(rows)
    design, play, learn = stages["design"], stages["play"], stages["learn"]
    assert design.seconds == pytest.approx(30.002)
    assert design.steps == 1 and design.tokens is None
    assert play.seconds == pytest.approx(30.0)
    # two steps trained: their tokens_per_s is the learner's, so the play tokens are unknown
    assert play.tokens is None and "lost on 2 of 3" in play.note
    assert learn.steps == 2
    assert learn.seconds == pytest.approx(56.0)
    assert learn.tokens == pytest.approx(150.0 * 16.0 + 100.0 * 40.0)
    assert learn.tok_s == pytest.approx(6400.0 / 56.0)
    assert "65.5 s" in learn.note  # the consumer's whole steps, publication included


def test_stage_totals_read_the_learners_own_rate(tmp_path: Path) -> None:
    # Runs since the learner's rate has its own name: tokens_per_s is the generation rate on
    # every step, learner_tokens_per_s the learner's on the steps that trained.
    steps = [
        _step(step=1, time_play_s=10.0, tokens_per_s=50.0, step_time_s=16.0, learner_tokens_per_s=150.0),
        _step(step=2, time_play_s=12.0, tokens_per_s=20.0, step_time_s=40.0, learner_tokens_per_s=100.0),
        _step(step=3, time_play_s=8.0, tokens_per_s=60.0),
    ]
    _write_jsonl(tmp_path, steps)
    stages = rl.stage_totals(rl.read_steps(tmp_path)[0])
    assert stages["play"].tokens == pytest.approx(500.0 + 240.0 + 480.0) and not stages["play"].note
    assert stages["learn"].tokens == pytest.approx(150.0 * 16.0 + 100.0 * 40.0)


def test_play_tokens_when_no_step_trained(tmp_path: Path) -> None:
    _write_jsonl(
        tmp_path,
        [_step(step=1, time_play_s=10.0, tokens_per_s=50.0), _step(step=2, time_play_s=5.0, tokens_per_s=80.0)],
    )
    play = rl.stage_totals(rl.read_steps(tmp_path)[0])["play"]
    assert play.tokens == pytest.approx(500.0 + 400.0)
    assert play.tok_s == pytest.approx(900.0 / 15.0)
    assert rl.stage_totals(rl.read_steps(tmp_path)[0])["learn"].tokens == 0


def test_sqlite_steps_count_from_one_and_stamp_the_jsonl(tmp_path: Path) -> None:
    _write_jsonl(tmp_path, STEPS[:2])
    _write_db(tmp_path, [(0, {"time_play_s": 10.0}, 100.0, 15.0), (1, {"time_play_s": 12.0}, 150.0, 30.0)])
    rows, source = rl.read_steps(tmp_path)
    assert source == "metrics.jsonl + run.sqlite timestamps"
    assert [(r.step, r.created_at, r.wall_s) for r in rows] == [(1, 100.0, 15.0), (2, 150.0, 30.0)]
    assert rows[0].num("step_time_s") == 16.0  # the metrics are the jsonl's
    (tmp_path / rl.METRICS_FILE).unlink()
    rows, source = rl.read_steps(tmp_path)
    assert source == "run.sqlite"
    assert [r.step for r in rows] == [1, 2] and rows[1].num("time_play_s") == 12.0


def test_overlap_from_the_database_timestamps(tmp_path: Path) -> None:
    # step 1: learn [90, 100]; produced at 85: play [80, 85], design [75, 80]
    # step 2: learn [105, 120]; produced at 95: play [87, 95] -- beside step 1's learn for 5 s
    _write_db(
        tmp_path,
        [
            (0, {"time_learn_s": 10.0, "time_play_s": 5.0, "time_design_s": 5.0}, 100.0, 15.0),
            (1, {"time_learn_s": 15.0, "time_play_s": 8.0, "time_design_s": 0.001}, 120.0, 25.0),
        ],
    )
    overlap = rl.overlap_from_steps(rl.read_steps(tmp_path)[0])
    assert overlap is not None
    assert overlap.pairs == 1
    assert overlap.stages == 3  # two plays, one design (step 2 did not design)
    assert overlap.seconds == pytest.approx(5.0)
    assert overlap.learn_seconds == pytest.approx(25.0)
    assert overlap.fraction == pytest.approx(0.2)
    assert rl.overlap_from_steps([rl.StepRow(1, {})]) is None  # metrics.jsonl alone: no timestamps


def test_covered_counts_the_union_once() -> None:
    assert rl.covered((0.0, 10.0), [(2.0, 5.0), (4.0, 6.0), (9.0, 20.0), (-5.0, 1.0)]) == pytest.approx(1 + 4 + 1)
    assert rl.covered((0.0, 10.0), []) == 0.0


def _trace(run: Path) -> None:
    (run / "config.toml").write_text(
        "[engine.designer]\ntemperature = 0.5\n[engine.agent]\ntemperature = 1.0\n[engine.hint]\ntemperature = 0.3\n"
    )
    gen = {"max_new": 16, "prompt_tokens": 1000, "steps": 4, "threads": 2, "threads_end": 2, "running": 1}
    events = [
        {"kind": "design", "step": 0, "t0": 0.0, "t1": 30.0},
        {"kind": "gen", "t0": 1.0, "t1": 21.0, "rows": 4, "temperature": 0.5, "new_tokens": 2000, **gen},
        {"kind": "play", "step": 0, "t0": 30.0, "t1": 40.0},
        {"kind": "gen", "t0": 30.0, "t1": 34.0, "rows": 16, "temperature": 1.0, "new_tokens": 400, **gen},
        {"kind": "gen", "t0": 35.0, "t1": 36.0, "rows": 8, "temperature": 0.3, "new_tokens": 100, **gen},
        {
            "kind": "learn",
            "t0": 43.0,
            "t1": 61.0,
            "threads": 2,
            "running": 1,
            "samples": [["agent", 150, 6, True], ["designer", 1400, 400, True], ["agent", 150, 6, False]],
            "micro": [[2, 1400, 1550, 406]],
        },
        {"kind": "play", "step": 1, "t0": 45.0, "t1": 55.0},
        # inside the learn [43, 61]: overlapped; and over half of that learn is beside it
        {
            "kind": "gen",
            "t0": 45.0,
            "t1": 55.0,
            "rows": 4,
            "temperature": 1.0,
            "new_tokens": 100,
            **gen,
            "threads_end": 1,
            "cached_tokens": 500,
        },
        {
            "kind": "learn",
            "t0": 70.0,
            "t1": 80.0,
            "threads": 2,
            "running": 1,
            "samples": [["agent", 160, 6, True]],
            "micro": [[1, 160, 160, 6]],
        },
        # the adapter probe: the agent's temperature, one row, outside any play span
        {"kind": "gen", "t0": 62.0, "t1": 63.0, "rows": 1, "temperature": 1.0, "new_tokens": 8, **gen},
        {"kind": "publish", "step": 0, "t0": 61.0, "t1": 69.0},
        {"kind": "load_call", "step": 1, "t0": 61.5, "t1": 67.0},
        {"kind": "adapter_load", "step": 1, "t0": 66.0, "t1": 67.0},
        {"kind": "probe", "step": 0, "t0": 67.0, "t1": 69.0},
        "not json",
    ]
    (run / rl.TRACE_FILE).write_text("\n".join(e if isinstance(e, str) else json.dumps(e) for e in events) + "\n")


def test_the_trace_gives_tokens_per_role_overlap_and_padding(tmp_path: Path) -> None:
    _trace(tmp_path)
    trace = rl.read_trace(tmp_path / rl.TRACE_FILE, rl.run_temperatures(tmp_path))
    assert [g.role for g in trace.gens] == ["designer", "agent", "hint", "agent", "other"]
    assert [s.step for s in trace.spans] == [1, 1, 2, 1, 1, 1, 1]  # counted from 1; the loads' is the version
    gens = rl.summarize_gens(trace)
    agent = gens["agent"]
    assert (agent.batches, agent.tokens, agent.rows) == (2, 500, [16, 4])
    assert agent.engine_s == pytest.approx(14.0)
    assert agent.median_rows == 10
    assert agent.alone_tok_s == pytest.approx(400 / 4.0)
    assert agent.overlapped_tok_s == pytest.approx(100 / 10.0)
    assert gens["designer"].tok_s == pytest.approx(2000 / 20.0)
    assert agent.shape() == "per row: prompt 100 (75 prefilled), 25.0 new; 4.0 steps a batch"
    split = rl.learn_split(trace)
    assert split == {"alone_tokens": 160.0, "alone_s": 10.0, "overlapped_tokens": 1550.0, "overlapped_s": 18.0}
    overlap = rl.overlap_from_trace(trace)
    assert (overlap.pairs, overlap.stages) == (1, 3)
    assert overlap.seconds == pytest.approx(10.0) and overlap.learn_seconds == pytest.approx(28.0)
    assert "1,710 real of 2,960 padded tokens (42% padding)" in rl.padding_line(trace)
    assert "1 designer samples" in rl.padding_line(trace)
    assert "1 of 5 batches ran on 1 thread" in rl.threads_line(trace)
    assert "4 role switches" in rl.interleave_line(trace)
    assert gens["other"].tokens == 8
    assert rl.publish_line(trace) == (
        "publication: 1 adapters, 8.0 s in all: waiting for the engine's lock 4.5 s, loading 1.0 s, probing 2.0 s"
    )


def test_stage_rows_and_the_ratios(tmp_path: Path) -> None:
    _write_jsonl(tmp_path, STEPS[:2])
    _trace(tmp_path)
    stages = rl.stage_totals(rl.read_steps(tmp_path)[0])
    trace = rl.read_trace(tmp_path / rl.TRACE_FILE, rl.run_temperatures(tmp_path))
    rows, _ = rl.stage_rows(stages, trace)
    by = {r.what.split(" (")[0]: r for r in rows}
    assert by["design"].tokens == 2000 and by["design"].seconds == pytest.approx(30.001)
    play = by["play"]
    assert play.tokens == 600  # agent + hint tokens from the trace, over the metrics' play seconds
    assert play.tok_s == pytest.approx(600 / 22.0)
    play.bench_tok_s = 600 / 22.0 * 2  # the benchmark twice as fast: ratio 0.5
    assert play.ratio == pytest.approx(0.5)
    learn = by["learn"]
    learn.bench_tok_s = learn.tok_s
    assert learn.ratio == pytest.approx(1.0)
    table = rl.render(rows, "AMD EPYC (avx512_bf16 yes)")
    assert "| 0.50 (BELOW 0.7) |" in table and "| 1.00 (meets 0.7) |" in table
    assert all(line.endswith("| AMD EPYC (avx512_bf16 yes) |") for line in table.splitlines()[2:])
    assert rl.ratio(None, 5.0) is None and rl.ratio(5.0, 0.0) is None and rl.ratio(3.0, 4.0) == 0.75


def test_role_of_needs_one_match() -> None:
    temps = {"designer": 0.5, "agent": 1.0, "hint": 1.0}
    assert rl.role_of(0.5, temps) == "designer"
    assert rl.role_of(1.0, temps) == "?"  # agent and hint alike: not told apart
    assert rl.role_of(0.7, temps) == "?"


def test_limits_count_the_models_gemms() -> None:
    limits = pytest.importorskip("limits")  # imports torch; nothing is timed here
    shape = limits.ModelShape()
    linears = shape.layer_linears()
    per_layer = sum(k * n for k, n in linears)
    assert per_layer == 576 * 576 * 2 + 576 * 192 * 2 + 576 * 1536 * 3
    decode = limits.decode_gemms(shape, 16)
    assert limits.flops_of(decode) == 2 * 16 * shape.weight_params()
    learn = limits.learner_gemms(shape, 1728, 768)
    expected = 2 * (2 * 1728 * 30 * per_layer) + 2 * (2 * 768 * 576 * 49152)
    assert limits.flops_of(learn) == expected
    assert len(learn) == 7  # equal shapes merged: 5 distinct decoder products, the lm_head's 2
    spread = limits.Spread.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (spread.median, spread.lo, spread.hi, spread.q1, spread.q3, spread.n) == (3.0, 1.0, 5.0, 2.0, 4.0, 5)
    assert (
        "3.0 GFLOP/s (IQR 2.0-4.0, min-max 1.0-5.0, 5 rounds)"
        == limits.Spread.of([x * 1e9 for x in (5, 1, 3, 2, 4)]).describe()
    )


def test_model_shape_from_config(tmp_path: Path) -> None:
    limits = pytest.importorskip("limits")
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "num_hidden_layers": 2,
                "vocab_size": 1000,
            }
        )
    )
    shape = limits.ModelShape.from_config(tmp_path)
    assert (shape.hidden, shape.head_dim, shape.kv_heads, shape.layers, shape.vocab) == (64, 16, 2, 2, 1000)
    assert shape.layer_linears()[1] == (64, 32)
    assert limits.ModelShape.from_config(tmp_path / "missing") == limits.ModelShape()
