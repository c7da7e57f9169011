#!/usr/bin/env bash
# GPU check (run on a machine with an NVIDIA GPU): installs the vllm extra, runs the GPU tests
# and a 3-step run of a small model, printing generation and learner throughput.
# Usage: bash scripts/gpu_smoke.sh [MODEL]   (default Qwen/Qwen3-0.6B; needs the hub or a local path)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-Qwen/Qwen3-0.6B}
nvidia-smi --query-gpu=name,memory.total --format=csv
make setup TORCH=torch
.venv/bin/pip install -q -e '.[vllm]'
.venv/bin/pytest -q -m gpu tests/gpu
.venv/bin/spade-async run configs/games_qwen3_4b.toml --headless \
  --set "model.name=\"$MODEL\"" --set model.qlora=false --set run.max_steps=3 \
  --set selfplay.envs_per_step=4 --set selfplay.plays=4 --set selfplay.hinted_plays=4 \
  --set "run.run_dir=\"runs/gpu-smoke-$(date +%s)\""
python3 benchmarks/learner.py --device cuda || true
