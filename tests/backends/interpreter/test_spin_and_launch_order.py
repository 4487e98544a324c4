"""The checks that run in every mode on the interpreter: a while loop that can never exit
(DeadlockError, watched from the first iteration in debug mode) and the launch order
(TRITIUM_SHUFFLE). Kernels whose programs wait on each other run on the interpreter by default.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from helpers_kernel_checks import assert_points_at
from tritium import compat
from tritium.errors import DeadlockError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    for name in ("TRITIUM_DEBUG", "TRITIUM_SHUFFLE", "TRITIUM_SPIN_CHECK_AFTER", "TRITIUM_BATCH_ELEMENTS"):
        monkeypatch.delenv(name, raising=False)


def _gelu_kernel():
    """The benchmark suite's GELU kernel, imported with ``triton`` resolving to tritium."""
    compat.install()
    try:
        spec = importlib.util.spec_from_file_location("_bench_kernels_spin", ROOT / "benchmarks" / "kernels.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.gelu_fwd
    finally:
        sys.meta_path.remove(compat._FINDER)
        for key in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[key]


# while loops that never exit -----------------------------------------------------------------------------------
@triton.jit
def wait_for_later_program(flag_ptr, out_ptr):
    if tl.program_id(0) == 0:
        while tl.load(flag_ptr) == 0:  # program 1 sets it, but program 0 runs first
            pass
        tl.store(out_ptr, 1)
    else:
        tl.atomic_xchg(flag_ptr, 1)


@triton.jit
def wait_for_earlier_program(flags_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid > 0:
        while tl.atomic_add(flags_ptr + pid - 1, 0) == 0:
            pass
    tl.store(out_ptr + pid, tl.load(out_ptr + pid - 1, mask=pid > 0, other=0) + 1)
    tl.atomic_xchg(flags_ptr + pid, 1)


@pytest.mark.parametrize("debug", [True, False])
def test_deadlock_names_the_waiting_program_and_loop(debug):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(DeadlockError) as info:
        wait_for_later_program[(2,)](flag, out, debug=debug)
    assert info.value.program_ids == [(0, 0, 0)]
    assert "program (0, 0, 0) spins forever" in str(info.value) and "1 has not started" in str(info.value)
    assert_points_at(info.value, wait_for_later_program, "while tl.load(flag_ptr) == 0")


@pytest.mark.parametrize("debug", [True, False])
def test_waiting_for_an_earlier_program_is_fine(debug):
    flags, out = np.zeros(8, np.int32), np.zeros(8, np.int32)
    wait_for_earlier_program[(8,)](flags, out, debug=debug)
    assert out.tolist() == list(range(1, 9)) and flags.tolist() == [1] * 8


def test_shuffled_launch_order_exposes_a_dependence_on_launch_order(monkeypatch):
    monkeypatch.setenv("TRITIUM_SHUFFLE", "3")
    flags, out = np.zeros(8, np.int32), np.zeros(8, np.int32)
    with pytest.raises(DeadlockError) as info:
        wait_for_earlier_program[(8,)](flags, out, debug=True)
    assert "shuffled order" in str(info.value)


@triton.jit
def forgets_to_advance(out_ptr, n, step):
    i = 0
    while i < n:
        i += step
    tl.store(out_ptr + tl.program_id(0), i)


def test_loop_that_changes_nothing_never_exits():
    out = np.zeros(3, np.int32)
    with pytest.raises(DeadlockError) as info:
        forgets_to_advance[(3,)](out, 5, 0, debug=True)
    assert info.value.program_ids == [(0, 0, 0), (1, 0, 0), (2, 0, 0)] and "reads no memory" in str(info.value)
    forgets_to_advance[(3,)](out, 5, 2, debug=True)
    assert out.tolist() == [6, 6, 6]


@triton.jit
def long_spin(counter_ptr, out_ptr, n):
    while tl.atomic_add(counter_ptr, 1) < n:  # the value read changes every time: not stuck
        pass
    tl.store(out_ptr, tl.load(counter_ptr))


def test_long_loops_that_make_progress_are_not_deadlocks(monkeypatch):
    monkeypatch.setenv("TRITIUM_SPIN_CHECK_AFTER", "10")
    counter, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    long_spin[(1,)](counter, out, 300)
    assert out[0] == 301


# the launch order -----------------------------------------------------------------------------------------------
@triton.jit
def last_writer(out_ptr):
    tl.store(out_ptr, tl.program_id(0))


def test_shuffle_changes_the_order_programs_run_in(monkeypatch):
    monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "1")
    out = np.zeros(1, np.int32)
    last_writer[(16,)](out)
    assert out[0] == 15  # launch order
    seen = {}
    for seed in (0, 1, 2, 3, 0):
        monkeypatch.setenv("TRITIUM_SHUFFLE", str(seed))
        last_writer[(16,)](out)
        seen.setdefault(seed, []).append(int(out[0]))
    assert seen[0][0] == seen[0][1]  # replayable
    assert len({v[0] for v in seen.values()}) > 1


def test_shuffle_leaves_race_free_results_alone(monkeypatch):
    x = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    plain = np.zeros(5000, np.float32)
    gelu = _gelu_kernel()
    gelu[(5,)](x, plain, 5000, BLOCK=1024)
    monkeypatch.setenv("TRITIUM_SHUFFLE", "11")
    monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "2048")
    shuffled = np.zeros(5000, np.float32)
    gelu[(5,)](x, shuffled, 5000, BLOCK=1024)
    assert plain.tobytes() == shuffled.tobytes()
