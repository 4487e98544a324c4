"""Kernels that once crashed inside tritium, as users reported them, each checked against torch.

The masked integer load with ``other=0`` is in test_interpreter_affine.py, tuple arguments in
test_tuple_arguments.py, ``tritium run``'s ``__file__`` in test_triton_namespace.py.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _values_after_a_custom_combine(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    total = tl.reduce(x, 0, _add)
    doubled = total * 2  # defined after the reduce, read in the loop and the if below
    acc = 0.0
    for _ in range(3):
        acc += doubled
    if tl.program_id(0) == 0:
        acc += doubled
    prefix = tl.associative_scan(x, 0, _add)
    shifted = prefix + 1
    for _ in range(2):
        shifted += 1
    tl.store(out_ptr + tl.arange(0, N), shifted + acc)


def test_values_defined_after_a_custom_combine_reach_later_loops_and_ifs(backend):
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    _values_after_a_custom_combine[(1,)](x, out, N=8)
    assert torch.equal(out, torch.cumsum(x, 0) + 3 + 4 * 2 * x.sum())


@triton.jit
def _add_pairs(a, b, c, d):
    return a + c, b + d


@triton.jit
def _two_operand_scan(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    ones = tl.full((N,), 1.0, tl.float32)  # the same in every program
    p, q = tl.associative_scan((x, ones), 0, _add_pairs)
    tl.store(out_ptr + offs, p + q)


def test_a_two_operand_scan_with_an_operand_equal_in_every_program(backend):
    x = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(16)
    _two_operand_scan[(2,)](x, out, N=8)
    expected = torch.cumsum(x.view(2, 8), 1) + torch.arange(1, 9, dtype=torch.float32)
    assert torch.equal(out, expected.flatten())


@triton.jit
def _int8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_an_int8_matmul_with_masked_k_tiles(backend):
    gen = torch.Generator().manual_seed(0)
    M, N, K = 5, 7, 45
    a = torch.randint(-128, 128, (M, K), dtype=torch.int8, generator=gen)
    b = torch.randint(-128, 128, (K, N), dtype=torch.int8, generator=gen)
    c = torch.zeros(M, N, dtype=torch.int32)
    _int8_matmul[(1,)](a, b, c, M, N, K, BM=16, BN=16, BK=32)
    assert torch.equal(c, a.int() @ b.int())


@triton.jit
def _max_with_index(a0, a1, b0, b1):
    take = a0 > b0
    return tl.where(take, a0, b0), tl.where(take, a1, b1)


@triton.jit
def _running_and_total_max(x_ptr, run_ptr, at_ptr, best_ptr, where_ptr, XBLOCK: tl.constexpr, R: tl.constexpr):
    # Inductor's cummax / max-with-index: the index operand is the same in every program
    rows = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    cols = tl.arange(0, R)[None, :]
    x = tl.load(x_ptr + cols + R * rows)
    index = tl.broadcast_to(cols.to(tl.int64), [XBLOCK, R])
    running, at = tl.associative_scan((x, index), 1, _max_with_index)
    tl.store(run_ptr + cols + R * rows, running)
    tl.store(at_ptr + cols + R * rows, at)
    best, where = tl.reduce((x, index), 1, _max_with_index)
    tl.store(best_ptr + rows, best[:, None])
    tl.store(where_ptr + rows, where[:, None])


def test_two_operand_scan_and_reduce_on_2d_blocks_with_a_uniform_operand(backend):
    # found running torch.cummax through torch.compile: a numpy broadcast error inside the scan
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, generator=gen)
    for xblock in (1, 2, 4):
        run, at = torch.zeros(4, 8), torch.zeros(4, 8, dtype=torch.int64)
        best, where = torch.zeros(4), torch.zeros(4, dtype=torch.int64)
        _running_and_total_max[(4 // xblock,)](x, run, at, best, where, XBLOCK=xblock, R=8)
        expected_run, expected_at = torch.cummax(x, 1)
        assert torch.equal(run, expected_run) and torch.equal(at, expected_at)
        assert torch.equal(best, x.max(1).values) and torch.equal(where, x.argmax(1))
