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

# The whole suite runs on the interpreter (named, so that tests of its own machinery run there);
# then the kernels that exercise execution (not the interpreter's own machinery) run again with
# the default backend, the compiled CPU backend, checked by the same oracles.
CPU_BACKEND_TESTS := tests/test_elementwise.py tests/test_casts.py tests/test_shape_ops.py \
	tests/test_reductions_and_dot.py tests/test_control_flow.py tests/test_early_return.py \
	tests/test_break_continue.py tests/test_random.py tests/test_device_print.py tests/test_cross_program.py \
	tests/test_seed_programs.py tests/test_block_pointers.py tests/test_tensor_descriptors.py \
	tests/test_tuple_arguments.py tests/test_libdevice.py tests/test_promotion.py tests/ops

test: $(STAMP)
	TRITIUM_BACKEND=interpreter $(BIN)/python -m pytest -n 2 tests
	$(BIN)/python -m pytest -n 2 $(CPU_BACKEND_TESTS)

clean:
	rm -rf $(VENV)
