"""``tl.expect_zero(x, mask)``: ``x`` unchanged, and, in debug mode only (as Triton checks it in debug
builds only), a DeviceAssertionError where ``x`` is nonzero under the mask."""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import DeviceAssertionError


@triton.jit
def _underflow_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    y = tl.exp(x)
    tl.store(o_ptr + r, tl.expect_zero(y, x < -200.0))


def test_values_pass_through_and_debug_mode_checks_the_masked_lanes():
    x = np.array([-300.0, -250.0, 0.0, 1.0, -1.0, -201.0, 2.0, -1000.0], np.float32)
    out = np.zeros_like(x)
    _underflow_kernel[(1,)](x, out, N=8, debug=True)  # exp underflows to 0 below -104 in fp32
    # exp within the backends' 4-ulp bound of fp64's, rounded to fp32 (which underflows to 0 here)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)).astype(np.float32), rtol=4 * 2.0**-23, atol=0)
    assert np.all(out[x < -200] == 0)


@triton.jit
def _expect_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, tl.expect_zero(x, r >= 4))


def test_a_nonzero_lane_under_the_mask_fails_in_debug_mode_only():
    x = np.array([1, 2, 3, 4, 0, 0, 7, 0], np.int32)
    out = np.zeros_like(x)
    _expect_kernel[(1,)](x, out, N=8)  # without debug mode: nothing is checked
    assert np.array_equal(out, x)
    with pytest.raises(DeviceAssertionError, match=r"lane 6: expect_zero expected x == 0 where mask is true"):
        _expect_kernel[(1,)](x, out, N=8, debug=True)
    x[6] = 0
    _expect_kernel[(1,)](x, out, N=8, debug=True)
    assert np.array_equal(out, x)
