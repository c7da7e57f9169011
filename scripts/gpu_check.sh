#!/usr/bin/env bash
# Device check for a CUDA machine with no network and no vLLM (see docs/gpu_checks.md).
#
# It installs nothing from the network. The packages such a machine lacks (bitsandbytes,
# pydantic and its parts, msgspec) come as wheels from a folder prepared beforehand on a
# machine with network by `make gpu-wheels` (default .gpu-wheels/, ~47 MB); they are unpacked
# into a temporary folder put on PYTHONPATH, so the machine's own environment is not changed.
# Then scripts/gpu_check.py runs on a random-initialised model with Qwen3-4B's shape: the HF
# engine on CUDA, a bf16 LoRA and a QLoRA learner step at 16 x 4096 tokens, the QLoRA learner's
# logprob gap (engine on the original and on the dequantised base) and the fork-safety of the
# CUDA probe. It prints one table, writes it as JSON,
# and exits non-zero on any failure.
#
# Usage: bash scripts/gpu_check.sh [ARGS...]       (ARGS go to scripts/gpu_check.py)
#   GPU_WHEELS=DIR    wheel folder (default .gpu-wheels)
#   PYTHON=python3    interpreter with torch (CUDA), transformers, peft, accelerate, anyio
#   OUT=DIR           where gpu_check.json goes (default runs/)
#   --smoke           the CPU mode (tiny shapes; CUDA-only rows are skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${GPU_WHEELS:-.gpu-wheels}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-runs}
SITE=$(mktemp -d "${TMPDIR:-/tmp}/spade-gpu-site.XXXXXX")
trap 'rm -rf "$SITE"' EXIT

shopt -s nullglob
wheels=("$WHEELS"/*.whl)
if ((${#wheels[@]})); then
  echo "installing ${#wheels[@]} wheel(s) from $WHEELS into $SITE (no network, no deps)"
  if ! "$PYTHON" -m pip install --quiet --no-index --no-deps --target "$SITE" "${wheels[@]}"; then
    # No pip (or it refused): a wheel is a zip of importable files; unpack it.
    "$PYTHON" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \
      "$SITE" "${wheels[@]}"
  fi
else
  echo "no wheels in $WHEELS: using only what $PYTHON already has (QLoRA needs bitsandbytes)"
fi
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
mkdir -p "$OUT"
exec "$PYTHON" scripts/gpu_check.py --json "$OUT/gpu_check.json" "$@"
