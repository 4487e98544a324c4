"""``tl.sort``'s compare-and-swap network where comparisons are false both ways (NaN, -0 beside +0).

Triton's network decides each lane alone: a lane takes its partner's value when ``(own > partner)
!= (descending ^ is_right)``. A pair that compares false both ways is then not swapped but merged
(the right lane copies the left one), so values are duplicated and others lost. The rows below were
sorted by Triton 3.6 on an H200 (bits recorded there); tests/execution/test_shape_ops.py holds 32-wide rows
from the same machine. Tolerance: none, bits compared.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.numerics import arithmetic

NAN, INF = np.nan, np.inf
ROWS = np.array([[NAN, 1, 3, 2, 0, 5, 4, 7],
                 [1, -0.0, 0.0, -1, INF, -INF, -0.0, 0.0],
                 [-2, 2, 1, -0.0, -0.0, NAN, NAN, NAN],
                 [3, 1, 2, 0, 7, 5, 6, 4]], np.float32)
# what the H200 gave, ascending and descending
GPU = {
    False: np.array([[NAN] * 8,
                     [-INF, -1, -0.0, -0.0, -0.0, -0.0, 1, INF],
                     [-2, -0.0, 1, 2, -2, -0.0, 1, 2],
                     [0, 1, 2, 3, 4, 5, 6, 7]], np.float32),
    True: np.array([[7, 5, 4, 0, 7, 5, 4, 0],
                    [INF, 1, 0.0, 0.0, 0.0, 0.0, -1, -INF],
                    [NAN] * 8,
                    [7, 6, 5, 4, 3, 2, 1, 0]], np.float32),
}


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    nan_bits = np.uint32(0x7FC00000)  # the GPU's NaNs here are all the default quiet NaN
    a_bits = np.where(np.isnan(a), nan_bits, a.view(np.uint32))
    b_bits = np.where(np.isnan(b), nan_bits, b.view(np.uint32))
    return bool((a_bits == b_bits).all())


@triton.jit
def _sort_rows(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offsets, tl.sort(tl.load(x_ptr + offsets), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
def test_network_gives_the_gpu_result(descending):
    assert _same_bits(arithmetic.bitonic_sort(ROWS.copy(), descending), GPU[descending])
    out = np.zeros_like(ROWS)
    _sort_rows[(1,)](ROWS, out, M=4, N=8, DESCENDING=descending)
    assert _same_bits(out, GPU[descending])
