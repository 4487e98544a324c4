"""Accesses under box masks (``compiler/analysis/masks.py``): 2-D tiles bounded on both sides, with
inclusive and exclusive, upper and lower, either-way-round comparisons, signed and unsigned indices,
on blocks that are full, partial or empty. A compiled backend runs a partial box's active part
without a test per lane (the CPU backend: ``Checks._box_nest``), so every lane it touches and every
lane it leaves must match numpy's slicing of the same rectangle.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def _window(x_ptr, y_ptr, bias_ptr, n_cols, row_lo, row_hi, col_lo, col_hi,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r[:, None] >= row_lo) & (row_hi >= r[:, None]) & (c[None, :] > col_lo) & (c[None, :] < col_hi)
    offsets = r[:, None] * n_cols + c[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=-1.0)
    bias = tl.load(bias_ptr + c, mask=(col_lo < c) & (c < col_hi), other=0.0)
    tl.store(y_ptr + offsets, x * 2.0 + bias[None, :], mask=mask)


@pytest.mark.parametrize("window", [(0, 63, -1, 96), (3, 40, 5, 77), (17, 17, 30, 32), (50, 10, 0, 96),
                                    (0, 63, 95, 96)])
def test_a_window_of_a_tile_is_read_and_written_exactly(window):
    row_lo, row_hi, col_lo, col_hi = window
    rows, cols = 64, 96
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    y = np.full((rows, cols), 7.0, np.float32)
    _window[(rows // 16, cols // 32)](x, y, bias, cols, row_lo, row_hi, col_lo, col_hi, BLOCK_M=16, BLOCK_N=32)
    expected = np.full((rows, cols), 7.0, np.float32)
    r0, r1, c0, c1 = max(row_lo, 0), row_hi + 1, max(col_lo + 1, 0), col_hi
    if r0 < r1 and c0 < c1:
        expected[r0:r1, c0:c1] = x[r0:r1, c0:c1] * np.float32(2.0) + bias[c0:c1]
    np.testing.assert_array_equal(y, expected)


@triton.jit
def _unsigned_tail(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.uint32)
    mask = n > offs
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 1, mask=mask)


@pytest.mark.parametrize("n", [0, 1, 100, 127, 128, 129])
def test_an_unsigned_tail_written_the_other_way_round(n):
    x = np.arange(256, dtype=np.int32)
    y = np.zeros(256, np.int32)
    _unsigned_tail[(2,)](x, y, np.uint32(n), BLOCK=128)
    expected = np.zeros(256, np.int32)
    expected[:n] = x[:n] + 1
    np.testing.assert_array_equal(y, expected)


@triton.jit
def _unsigned_64_tail(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BELOW: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.uint64)
    mask = offs < n if BELOW else offs >= n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 1, mask=mask)


@pytest.mark.parametrize("below", [True, False])
@pytest.mark.parametrize("n", [2 ** 64 - 1, 2 ** 63 + 5, 200, 0])
def test_a_uint64_bound_beyond_every_signed_value(n, below):
    """``offs < n`` / ``offs >= n`` with n a uint64 past 2**63: every lane on / off (a signed
    comparison says the opposite)."""
    x = np.arange(256, dtype=np.int32)
    y = np.zeros(256, np.int32)
    _unsigned_64_tail[(2,)](x, y, np.uint64(n), BLOCK=128, BELOW=below)
    on = np.arange(256) < n if below else np.arange(256) >= n
    np.testing.assert_array_equal(y, np.where(on, x + 1, 0))
