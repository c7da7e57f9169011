#!/usr/bin/env bash
# GPU check (run on a machine with an NVIDIA GPU): the GPU tests, then a 3-step run of the
# whole GPU path (vLLM engine, QLoRA learner, checkpoints), its resume, and the learner
# benchmark on CUDA. Any failure stops the script with a non-zero status.
#
# Usage: bash scripts/gpu_smoke.sh [MODEL_DIR]
#   MODEL_DIR  a local folder holding a small HF model (e.g. Qwen3-0.6B you downloaded);
#              default: the embedded SmolLM2-135M-Instruct (no download).
#   PYTHON=... use this interpreter's environment (with the vllm extra installed) instead of
#              creating .venv with `make setup` and `pip install -e '.[vllm]'`.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=configs/gpu_smoke.toml
MODEL=${1:-embedded:smollm2-135m-instruct}
if [[ "$MODEL" != embedded:* && ! -d "$MODEL" ]]; then
  echo "error: $MODEL is not a folder; pass a local model folder (this script downloads nothing)" >&2
  exit 2
fi
export HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total --format=csv
if [[ -z "${PYTHON:-}" ]]; then
  make setup TORCH=torch
  .venv/bin/pip install -q -e '.[vllm]'
  PYTHON=.venv/bin/python
fi
if [[ "$MODEL" != embedded:* ]]; then export SPADE_GPU_MODEL="$MODEL"; fi
"$PYTHON" -m pytest -q -m gpu tests/gpu
RUN_DIR="runs/gpu-smoke-$(date +%s)"
SETS=(--set "model.name=\"$MODEL\"" --set "run.run_dir=\"$RUN_DIR\"")
"$PYTHON" -m spade_async.cli config show "$CONFIG" "${SETS[@]}" | tail -n 4
"$PYTHON" -m spade_async.cli run "$CONFIG" --headless "${SETS[@]}"
"$PYTHON" -m spade_async.cli resume "$RUN_DIR" --headless --max-steps 4
"$PYTHON" benchmarks/learner.py --device cuda
