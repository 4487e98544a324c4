"""Loops whose trip count differs between programs run each iteration on the programs still in
them (the others are compacted away), and loads whose programs start at irregular places gather
whole rows. Both must give exactly what a program-by-program evaluation gives.

Oracles: numpy computing each program's loop on its own (integer sums and fp32 running maxima,
compared bit for bit), and numpy fancy indexing for the gathered loads.
"""
import ml_dtypes
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from helpers_kernel_checks import spin_unless_even
from tritium.errors import DeadlockError, OutOfBoundsError

# The interpreter's own behaviour: its kernels run on it whatever the default backend is.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")


@triton.jit
def ragged_rows(x_ptr, lengths_ptr, sums_ptr, maxes_ptr, last_ptr, out_ptr, ROW: tl.constexpr, BLOCK: tl.constexpr):
    """Program p walks row p of x in BLOCK-wide chunks, only as far as lengths[p]: per-program trip
    counts. It carries a scalar, a block and a pointer through the loop."""
    pid = tl.program_id(0)
    n = tl.load(lengths_ptr + pid)
    lanes = tl.arange(0, BLOCK)
    ptr = x_ptr + pid * ROW + lanes
    total = 0
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    last = -1
    for start in range(0, n, BLOCK):
        chunk = tl.load(ptr, mask=start + lanes < n, other=float("-inf"))
        best = tl.maximum(best, chunk)
        total += tl.sum(tl.where(start + lanes < n, chunk, 0.0).to(tl.int32), axis=0)
        last = start
        ptr += BLOCK
    tl.store(sums_ptr + pid, total)
    tl.store(maxes_ptr + pid * BLOCK + lanes, best)
    tl.store(last_ptr + pid, last)
    tl.store(out_ptr + pid * BLOCK + lanes, tl.load(ptr - BLOCK, mask=n > 0, other=0.0))  # where the pointer ended


@pytest.mark.parametrize("batch_elements", ["8", "64", "1048576"])  # one program, a few, all at once
def test_per_program_trip_counts_match_each_program_alone(batch_elements, monkeypatch):
    monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", batch_elements)
    rng = np.random.default_rng(5)
    programs, row, block = 23, 96, 8
    x = rng.integers(-50, 50, size=(programs, row)).astype(np.float32)
    lengths = rng.integers(0, row + 1, size=programs).astype(np.int32)
    lengths[:3] = [0, row, 1]  # no iteration, every iteration, a one-lane tail
    sums, last = np.zeros(programs, np.int32), np.zeros(programs, np.int32)
    maxes, out = np.zeros((programs, block), np.float32), np.zeros((programs, block), np.float32)
    ragged_rows[(programs,)](x, lengths, sums, maxes, last, out, ROW=row, BLOCK=block)
    for p in range(programs):
        n = int(lengths[p])
        padded = np.full(-(-n // block) * block, -np.inf, np.float32)
        padded[:n] = x[p, :n]
        expected_max = padded.reshape(-1, block).max(axis=0) if n else np.full(block, -np.inf, np.float32)
        assert sums[p] == int(x[p, :n].sum()), p
        np.testing.assert_array_equal(maxes[p], expected_max)
        assert last[p] == ((n - 1) // block) * block if n else last[p] == -1
        chunks = -(-n // block)
        expected_out = x[p, (chunks - 1) * block:chunks * block] if n else np.zeros(block, np.float32)
        np.testing.assert_array_equal(out[p, :len(expected_out)], expected_out)


@triton.jit
def ragged_overrun(x_ptr, lengths_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.load(lengths_ptr + pid)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + pid * 64 + start + tl.arange(0, BLOCK))  # unmasked: runs past row 3's end
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def test_error_in_a_late_iteration_names_the_program_still_running():
    """Only program 3 reaches the iteration that overruns: the error must name it, not the lane
    it has in the compacted batch."""
    x = np.zeros(4 * 64, np.float32)
    lengths = np.array([16, 32, 8, 80], np.int32)  # program 3 reads x[192 + 64 ...]: past the end
    out = np.zeros(4 * 16, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        ragged_overrun[(4,)](x, lengths, out, BLOCK=16)
    assert info.value.program_id == (3, 0, 0)
    assert info.value.offset == 256
    assert not out.any()  # nothing was stored


@triton.jit
def gather_heads(x_ptr, head_ptr, out_ptr, SEQ: tl.constexpr, DIM: tl.constexpr, TRANSPOSE: tl.constexpr):
    """Program p reads the [SEQ, DIM] matrix of head head[p] (an irregular start per program),
    row-major or transposed."""
    pid = tl.program_id(0)
    head = tl.load(head_ptr + pid)
    rows = tl.arange(0, SEQ)
    cols = tl.arange(0, DIM)
    if TRANSPOSE:
        tile = tl.load(x_ptr + head * SEQ * DIM + rows[None, :] * DIM + cols[:, None])
        tl.store(out_ptr + pid * SEQ * DIM + cols[:, None] * SEQ + rows[None, :], tile)
    else:
        tile = tl.load(x_ptr + head * SEQ * DIM + rows[:, None] * DIM + cols[None, :])
        tl.store(out_ptr + pid * SEQ * DIM + rows[:, None] * DIM + cols[None, :], tile)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("transpose", [False, True])
def test_irregular_program_starts_gather_whole_rows(dtype, transpose):
    rng = np.random.default_rng(1)
    heads, seq, dim = 6, 16, 8
    x = rng.standard_normal((heads, seq, dim)).astype(np.float32).astype(dtype)
    order = np.array([4, 0, 0, 5, 2, 1, 3, 3], np.int32)  # repeats, reversed steps: no regular stride
    out = np.zeros((len(order), seq, dim), dtype)
    gather_heads[(len(order),)](x, order, out, SEQ=seq, DIM=dim, TRANSPOSE=transpose)
    expected = x[order].transpose(0, 2, 1) if transpose else x[order]  # the transposed copy is [DIM, SEQ]
    np.testing.assert_array_equal(out.reshape(-1).view(np.uint8), np.ascontiguousarray(expected).reshape(-1).view(np.uint8))


@triton.jit
def collatz_steps(x_ptr, steps_ptr, peak_ptr, only_odd_programs: tl.constexpr):
    """Per program, the Collatz trajectory of x[pid]: a while loop whose trip count depends on
    the data. With only_odd_programs, even programs skip the loop (it runs under a divergent if)."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    peak = x
    if (pid % 2 == 1) or (not only_odd_programs):
        while x != 1:
            x = tl.where(x % 2 == 0, x // 2, 3 * x + 1)
            peak = tl.maximum(peak, x)
            steps += 1
    tl.store(steps_ptr + pid, steps)
    tl.store(peak_ptr + pid, peak)


def _collatz(n: int) -> tuple[int, int]:
    steps, peak = 0, n
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        peak, steps = max(peak, n), steps + 1
    return steps, peak


@pytest.mark.parametrize("only_odd_programs", [False, True])
@pytest.mark.parametrize("batch_elements", ["1", "1048576"])
def test_while_with_per_program_trip_counts(only_odd_programs, batch_elements, monkeypatch):
    monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", batch_elements)
    x = np.array([1, 2, 3, 6, 7, 9, 27, 97, 871, 5, 1, 31], np.int64)
    steps, peak = np.full(len(x), -1, np.int32), np.zeros(len(x), np.int64)
    collatz_steps[(len(x),)](x, steps, peak, only_odd_programs=only_odd_programs)
    for p, n in enumerate(x.tolist()):
        expected = _collatz(n) if (p % 2 == 1 or not only_odd_programs) else (0, n)
        assert (int(steps[p]), int(peak[p])) == expected, p




def test_endless_loop_of_some_programs_names_them(monkeypatch):
    monkeypatch.setenv("TRITIUM_SPIN_CHECK_AFTER", "5")
    out = np.zeros(6, np.int32)
    with pytest.raises(DeadlockError) as info:
        spin_unless_even[(6,)](out)
    message = str(info.value)
    assert "(1, 0, 0)" in message and "(3, 0, 0)" in message and "(5, 0, 0)" in message
    assert "(0, 0, 0)" not in message and "(2, 0, 0)" not in message
