"""scripts/gpu_check.sh's QLoRA rows for real, on the CPU (bitsandbytes' CPU build lives in
this venv only): the NF4 base is dequantised into a plain model, an HF engine samples from it,
and the QLoRA learner scores those tokens within the bound a QLoRA run is held to (0.15 nats
mean), far closer than the same learner scores an engine on the original base. On a GPU the
same rows run on Qwen3-4B's shapes (docs/gpu_checks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_qlora_rows_run_and_the_served_base_closes_the_gap(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "GPU_WHEELS": str(tmp_path / "no-wheels"), "OUT": str(tmp_path)}
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_check.sh"), "--smoke", "--workdir", str(tmp_path / "model")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows = {r["name"]: r for r in json.loads((tmp_path / "gpu_check.json").read_text())["rows"]}
    assert {n for n, r in rows.items() if r["status"] == "skip"} == {"cuda probe: control (no NVML check)"}
    served = rows["learner QLoRA (NF4): logprob gap vs engine on the served base"]["data"]
    original = rows["learner QLoRA (NF4): logprob gap vs engine on the original base"]["data"]
    print(
        f"gpu_check --smoke, QLoRA learner vs engine: served base mean|d| {served['mean_abs']:.4f} "
        f"p99 {served['p99_abs']:.4f}; original base mean|d| {original['mean_abs']:.4f} p99 {original['p99_abs']:.4f}"
    )
    assert served["tokens"] >= 8 and served["mean_abs"] < 0.15
    assert served["mean_abs"] < original["mean_abs"]  # the served base is the learner's own weights
    assert rows["learner QLoRA (NF4): step 4x64"]["data"]["version"] == 2
