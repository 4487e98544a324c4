"""Debug mode on the CPU backend runs compiled code: a variant of the kernel's module with debug
mode's checks (backends/cpu/debug_checks.py), which the checks of tests/execution/test_debug_mode.py
hold to the interpreter's messages. Here: that the variant is what runs (and the interpreter only
for the kernels whose checks stay its own), with the same bits as the plain code, and that debug
mode checks bounds even when TRITIUM_BOUNDS_CHECKS=0.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import OutOfBoundsError


@pytest.fixture(autouse=True)
def on_the_cpu(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3 + offs, mask=mask)


def test_debug_launch_runs_the_checked_variant_not_the_interpreter():
    x = np.arange(100, dtype=np.int32)
    plain, checked = np.zeros(100, np.int32), np.zeros(100, np.int32)
    compiled = scale.warmup(x, plain, 100, BLOCK=32, grid=(4,))
    compiled[(4,)](x, plain, 100)
    compiled[(4,)](x, checked, 100, debug=True)
    executable = compiled.executable
    assert executable._checked_executable is not None and executable._debug_executable is None
    assert executable._checked_executable.debug_variant and "tritium_grid" in executable._checked_executable.asm["llir"]
    np.testing.assert_array_equal(checked, plain)
    np.testing.assert_array_equal(plain, x * 3 + np.arange(100))


@triton.jit
def ticket_store(counter_ptr, out_ptr):
    ticket = tl.atomic_add(counter_ptr, 1)  # a used atomic: the programs run one at a time, in order
    tl.store(out_ptr + tl.program_id(0), ticket)


def test_kernels_that_synchronise_are_checked_on_the_interpreter():
    counter, out = np.zeros(1, np.int32), np.zeros(4, np.int32)
    compiled = ticket_store.warmup(counter, out, grid=(4,))
    compiled[(4,)](counter, out, debug=True)
    assert out.tolist() == [0, 1, 2, 3]
    assert compiled.executable._debug_executable is not None and compiled.executable._checked_executable is None


@triton.jit
def off_the_end(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_debug_mode_checks_bounds_even_when_bounds_checks_are_off(monkeypatch):
    monkeypatch.setenv("TRITIUM_BOUNDS_CHECKS", "0")
    x, out = np.ones(16, np.float32), np.zeros(8, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        off_the_end[(1,)](x, out, BLOCK=16, debug=True)
    assert info.value.tensor == "out_ptr" and info.value.offset == 8
