"""Calls inside kernels: a starred argument is evaluated once, so a side effect in it happens once.

The oracle is the grid: each program increments a counter once, so after the launch the counter
equals the number of programs, and the compiled IR holds one atomic per call written.
"""
from __future__ import annotations

import re

import numpy as np

import tritium as triton
import tritium.language as tl

PROGRAMS = 5


@triton.jit
def _sum_pair(a, b):
    return a + b


@triton.jit
def _starred_helper_kernel(counter_ptr, out_ptr):
    pid = tl.program_id(0)
    # the starred tuple holds an atomic: it must run once per program
    total = _sum_pair(*(tl.atomic_add(counter_ptr, 1), pid))
    tl.store(out_ptr + pid, total)


@triton.jit
def _starred_builtin_kernel(counter_ptr, out_ptr):
    pid = tl.program_id(0)
    # a starred argument of a tl builtin goes through the same argument evaluation
    low = tl.minimum(*(tl.atomic_add(counter_ptr, 1), pid + 100))
    tl.store(out_ptr + pid, low)


def _count_atomics(kernel) -> int:
    return len(re.findall(r"\batomic_rmw\b", kernel.ir("*i32,*i32")))


def _launch(kernel) -> tuple[int, np.ndarray]:
    counter = np.zeros(1, dtype=np.int32)
    out = np.full(PROGRAMS, -1, dtype=np.int32)
    kernel[(PROGRAMS,)](counter, out)
    return int(counter[0]), out


def test_starred_argument_of_a_jit_helper_runs_its_atomic_once():
    count, out = _launch(_starred_helper_kernel)
    assert count == PROGRAMS
    # each program gets a distinct ticket 0..PROGRAMS-1 and adds its own id
    tickets = out - np.arange(PROGRAMS)
    assert sorted(tickets.tolist()) == list(range(PROGRAMS))
    assert _count_atomics(_starred_helper_kernel) == 1


def test_starred_argument_of_a_builtin_runs_its_atomic_once():
    count, out = _launch(_starred_builtin_kernel)
    assert count == PROGRAMS
    assert sorted(out.tolist()) == list(range(PROGRAMS))  # the tickets: each below pid + 100
    assert _count_atomics(_starred_builtin_kernel) == 1
