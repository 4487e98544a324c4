"""``tl.fdiv(x, y, approx=True)`` against an fp64 oracle.

A GPU runs it as div.approx.f32, which the PTX ISA documents as within 2 ulp of the quotient for
``2**-126 <= |y| <= 2**126`` and as ``x * (1 / y)`` with a reciprocal that underflows to zero
beyond, so that ``x / y`` is a zero there (NaN for an infinite ``x``). The host backends give the
correctly rounded quotient in the documented range, so they are held to 0 ulp here and a GPU to 2.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


@triton.jit
def _approx_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, tl.fdiv(tl.load(x_ptr + r), tl.load(y_ptr + r), approx=True))


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distance in fp32 steps between ``a`` and ``b`` (same sign assumed)."""
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_approximate_division_is_within_div_approx_bound(backend):
    g = np.random.default_rng(3)
    n = 4096
    x = (g.standard_normal(n) * np.exp2(g.uniform(-60, 60, n))).astype(np.float32)
    y = (np.where(g.random(n) < 0.5, -1, 1) * np.exp2(g.uniform(-125.9, 125.9, n))).astype(np.float32)
    out = np.zeros_like(x)
    _approx_kernel[(1,)](x, y, out, N=n)
    with np.errstate(over="ignore"):  # quotients past fp32's range become inf, as the kernel's do
        exact = (x.astype(np.float64) / y.astype(np.float64)).astype(np.float32)  # one rounding: 53 >= 2*24+2
    normal = np.abs(exact) >= np.finfo(np.float32).tiny  # ulps of subnormal and overflowing results differ
    finite = np.isfinite(exact)
    assert np.array_equal(np.signbit(out[finite]), np.signbit(exact[finite]))
    worst = int(_ulps(out[normal & finite], exact[normal & finite]).max())
    assert worst <= (2 if backend == "cuda" else 0), worst


def test_divisors_beyond_two_to_the_126_give_a_zero():
    x = np.array([1.0, -3.0, 5e30, np.inf, -2.0, 7.0, np.nan, 1.0], np.float32)
    y = np.array([2.0**127, 2.0**127, -2.0**126 * 1.5, 2.0**127, np.inf, -np.inf, 2.0**127, 2.0**126], np.float32)
    out = np.full_like(x, 42.0)
    _approx_kernel[(1,)](x, y, out, N=8)
    # x * (a zero of y's sign): +0, -0, -0, NaN, -0, -0, NaN; 2**126 itself is in range: 2**-126 exactly
    expected = np.array([0.0, -0.0, -0.0, np.nan, -0.0, -0.0, np.nan, 2.0**-126], np.float32)
    assert np.array_equal(out, expected, equal_nan=True)
    signed = [0, 1, 2, 4, 5]  # the lanes whose result is a zero (a NaN's sign is not specified)
    assert np.array_equal(np.signbit(out[signed]), np.signbit(expected[signed]))


@triton.jit
def _approx_fp16_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r).to(tl.float64)
    tl.store(o_ptr + r, tl.fdiv(x, x + 1.0, approx=True))


@triton.jit
def _approx_and_ieee_kernel(x_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(x_ptr + r, tl.fdiv(x, x, ieee_rounding=True, approx=True))


def test_approx_takes_fp32_only_and_not_with_ieee_rounding():
    x = np.ones(8, np.float32)
    with pytest.raises(CompilationError, match="approx division requires float32 operands, got fp64"):
        _approx_fp16_kernel[(1,)](x, np.zeros(8, np.float64), N=8)
    with pytest.raises(CompilationError, match="approx and ieee_rounding cannot both be True") as error:
        _approx_and_ieee_kernel[(1,)](x, N=8)
    assert "tl.fdiv(x, x, ieee_rounding=True, approx=True)" in str(error.value)
    assert "^" in str(error.value)
