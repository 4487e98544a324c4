"""Comparisons of index blocks kept symbolic (``pid * BLOCK + arange`` against a bound) decide
whole batches at once when the answer is the same in every lane; everywhere else they compute
lane by lane. Either way the result must be numpy's comparison of the same integers.

Oracle: numpy comparing the materialised int32 (or wrapped) offsets, element by element.
"""
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl

PREDICATES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
              "eq": np.equal, "ne": np.not_equal}


@triton.jit
def compare_offsets(out_ptr, bound, scale, PREDICATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs * scale
    if PREDICATE == "lt":
        result = idx < bound
    elif PREDICATE == "le":
        result = idx <= bound
    elif PREDICATE == "gt":
        result = idx > bound
    elif PREDICATE == "ge":
        result = idx >= bound
    elif PREDICATE == "eq":
        result = idx == bound
    else:
        result = idx != bound
    tl.store(out_ptr + offs, result.to(tl.int8))


@pytest.mark.parametrize("predicate", list(PREDICATES))
@pytest.mark.parametrize("bound", [-5, 0, 100, 127, 128, 200, 256, 10_000])  # before, inside, at and past the grid
@pytest.mark.parametrize("scale", [1, -1, 3])
def test_offsets_against_a_bound(predicate, bound, scale):
    programs, block = 8, 32
    out = np.full(programs * block, 7, np.int8)
    compare_offsets[(programs,)](out, bound, scale, PREDICATE=predicate, BLOCK=block)
    offsets = np.arange(programs * block, dtype=np.int32) * scale
    np.testing.assert_array_equal(out, PREDICATES[predicate](offsets, bound).astype(np.int8))


def test_offsets_that_wrap_in_int32_compare_as_wrapped():
    """pid * BLOCK + arange times a huge scale overflows int32: the comparison sees the wrapped
    values, as a GPU's 32-bit arithmetic would."""
    programs, block, scale = 4, 16, 1 << 28
    out = np.zeros(programs * block, np.int8)
    compare_offsets[(programs,)](out, 0, scale, PREDICATE="lt", BLOCK=block)
    wrapped = (np.arange(programs * block, dtype=np.int64) * scale).astype(np.int32)  # two's complement wrap
    np.testing.assert_array_equal(out, (wrapped < 0).astype(np.int8))
    assert out.any() and not out.all()


@triton.jit
def masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=-1.0), mask=mask)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 255, 256])
def test_mask_decided_for_whole_batches_still_guards_the_tail(n):
    x = np.arange(256, dtype=np.float32)
    y = np.full(256, 99.0, np.float32)
    masked_copy[(4,)](x, y, n, BLOCK=64)
    np.testing.assert_array_equal(y[:n], x[:n])
    assert (y[n:] == 99.0).all()


@triton.jit
def _masked_int_load_with_other(C, out, N):
    i = tl.arange(0, 2)
    c = tl.load(C + 0 * N + i, mask=i < N, other=0)
    tl.store(out + i, c)


def test_masked_integer_load_with_a_symbolic_other():
    """`other=0` on an integer load is an affine splat in the interpreter; the window path must
    materialize it (it crashed with a TypeError inside numpy)."""
    C = torch.tensor([5, 6, 7, 8], dtype=torch.int32)
    out = torch.full((2,), -1, dtype=torch.int32)
    _masked_int_load_with_other[(1,)](C, out, 1)
    assert out.tolist() == [5, 0]


@triton.jit
def _int8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_int8_dot_over_masked_tiles():
    torch.manual_seed(0)
    a = torch.randint(-128, 128, (16, 40), dtype=torch.int8)
    b = torch.randint(-128, 128, (40, 16), dtype=torch.int8)
    c = torch.empty(16, 16, dtype=torch.int32)
    _int8_matmul[(1,)](a, b, c, 16, 16, 40, BM=16, BN=16, BK=32)
    assert torch.equal(c, a.to(torch.int32) @ b.to(torch.int32))
