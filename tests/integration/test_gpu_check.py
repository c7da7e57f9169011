"""scripts/gpu_check.sh end to end in its CPU mode (tiny Qwen3-shaped model): every row runs
except the CUDA-only ones, which are marked skipped; and a CUDA run on a machine without a GPU
fails with a non-zero exit and says why. The CUDA rows themselves run only on a GPU machine
(docs/gpu_checks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CUDA_ONLY = {"cuda probe: control (no NVML check)"}
NEEDS_BITSANDBYTES = {  # the main venv has no bitsandbytes; tests_vllm_cpu runs these rows
    "served base: dequantise the NF4 base",
    "engine on the served base: load",
    "engine on the served base: batch 2",
    "engine on the served base: batch 4",
    "learner QLoRA (NF4): load",
    "learner QLoRA (NF4): logprob gap vs engine on the original base",
    "learner QLoRA (NF4): logprob gap vs engine on the served base",
    "learner QLoRA (NF4): step 4x64",
}


def run_check(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = {**os.environ, "PYTHON": sys.executable, "GPU_WHEELS": str(tmp_path / "no-wheels"), "OUT": str(tmp_path)}
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_check.sh"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    return proc, report


@pytest.mark.slow
def test_cpu_mode_runs_every_row_but_the_cuda_ones(tmp_path: Path) -> None:
    proc, report = run_check(tmp_path, "--smoke", "--workdir", str(tmp_path / "model"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows = {r["name"]: r for r in report["rows"]}
    assert report["ok"] and report["device"] == "cpu" and report["shape"] == "qwen3-tiny"
    skipped = CUDA_ONLY | NEEDS_BITSANDBYTES
    assert {n for n, r in rows.items() if r["status"] == "skip"} == skipped
    assert all(r["status"] == "ok" for n, r in rows.items() if n not in skipped)
    assert rows["cuda probe: fork-safe"]["data"]["gpus"] == 0
    for batch in (2, 4):  # every row generated, with logprobs
        data = rows[f"engine: batch {batch}"]["data"]
        assert data["tokens"] >= batch and data["tokens_per_s"] > 0
    gap = rows["learner LoRA (float32): logprob gap vs engine"]["data"]
    assert gap["tokens"] >= 2 * 4 and gap["mean_abs"] < 1e-3  # learner and engine agree token by token
    step = rows["learner LoRA (float32): step 4x64"]["data"]
    assert step["version"] == 2 and step["n_samples"] == 4 and step["grad_norm"] > 0  # warm-up + measured
    assert "learner QLoRA (NF4): step 4x64" in proc.stdout and "all checks passed" in proc.stdout
    assert (tmp_path / "model" / "qwen3-tiny" / "config.json").exists()


def test_a_cuda_run_without_a_gpu_fails_and_says_why(tmp_path: Path) -> None:
    proc, report = run_check(tmp_path, "--device", "cuda")
    assert proc.returncode == 1
    assert not report["ok"]
    probe = report["rows"][0]
    assert probe["name"] == "cuda probe: fork-safe" and probe["status"] == "FAIL"
    assert "no CUDA GPU visible" in probe["detail"]
    assert "FAILED" in proc.stdout
