# `make demo` and `make test` each create .venv when it is missing, install tritium with what
# it needs (torch is the CPU build), then run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tritium demo

# ruff, then the whole suite in one run: the tests under tests/execution/ run once on every
# backend that launches kernels on host memory (the interpreter, the compiled CPU backend, and the
# CUDA backend where there is a GPU: the `backend` fixture of tests/conftest.py); the others on the
# interpreter.
test: $(STAMP)
	$(BIN)/python -m ruff check src tests benchmarks
	$(BIN)/python -m pytest -n 2 tests

clean:
	rm -rf $(VENV)
