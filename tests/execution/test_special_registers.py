"""``tl.extra.cuda.globaltimer()``, ``smid()``, ``num_threads()`` and ``num_warps()`` on every backend.

The oracle is the host itself: on the host backends globaltimer is the real-time clock in
nanoseconds since the epoch (so the kernel's readings fall between time.time_ns() before and after
the launch, in program order), smid is a CPU core's index (below os.cpu_count()); num_threads and
num_warps are the launch's num_warps (times 32), as Triton makes them constexprs."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.language.extra import cuda as tlcuda


@triton.jit
def _clocked(t_ptr, sm_ptr, WORK: tl.constexpr):
    pid = tl.program_id(0)
    start = tlcuda.globaltimer()
    acc = pid * 0
    for i in range(WORK):
        acc = (acc * 3 + i) % 65521
    stop = tlcuda.globaltimer()
    tl.store(t_ptr + 2 * pid, start)
    tl.store(t_ptr + 2 * pid + 1, stop + (acc & 0))
    tl.store(sm_ptr + pid, tlcuda.smid())


def test_globaltimer_counts_nanoseconds_and_smid_names_a_processor(backend):
    n = 6
    t, sm = np.zeros(2 * n, np.int64), np.full(n, -1, np.int32)
    before = time.time_ns()
    _clocked[(n,)](t, sm, WORK=2000)
    after = time.time_ns()
    start, stop = t[0::2], t[1::2]
    assert np.all(stop >= start)  # each program reads the timer twice, in order
    assert np.all(sm >= 0)
    if backend != "cuda":
        assert np.all((before <= start) & (stop <= after))
        assert np.all(sm < (os.cpu_count() or 1))


@triton.jit
def _threads(out_ptr):
    tl.store(out_ptr, tlcuda.num_threads())
    tl.store(out_ptr + 1, tlcuda.num_warps())
    tl.static_assert(tlcuda.num_threads() == tlcuda.num_warps() * 32)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_num_threads_and_num_warps_are_the_launchs(num_warps):
    out = np.zeros(2, np.int32)
    _threads[(1,)](out, num_warps=num_warps)
    assert out.tolist() == [32 * num_warps, num_warps]
