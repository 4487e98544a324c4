"""``numerics.fma`` (the interpreter's fma and constant folding's): ``a * b + c`` rounded once, for
fp32 through an fp64 sum whose rare ties (an fp64 sum exactly halfway between two fp32 values, where
the exact sum's side decides) take an exact path; checked against the exact sum rounded once
(fractions). Tolerance: none, bits compared."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tritium.numerics import arithmetic
from helpers_elementwise import assert_bits_equal, round_exact


def _exact(a, b, c, dtype) -> np.ndarray:
    return np.array([round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dtype)
                     for x, y, z in zip(a, b, c)], dtype)


def test_an_fp64_sum_on_an_fp32_tie_rounds_by_the_exact_sums_side():
    """1 + 2^-23 + 2^-24 - 2^-70 is just below the tie between 1 + 2^-23 and 1 + 2^-22: its fp64
    rounding is the tie itself, which ties-to-even would take to 1 + 2^-22; once rounded it is
    1 + 2^-23. And the mirror case just above a tie."""
    a = np.array([2.0 ** -24 * (1 + 2.0 ** -23), 2.0 ** -24 * (1 + 2.0 ** -23)], np.float32)
    b = np.array([1 - 2.0 ** -23, 1 + 2.0 ** -23], np.float32)
    c = np.array([1 + 2.0 ** -23, 1.0], np.float32)
    naive = (a.astype(np.float64) * b + c).astype(np.float32)
    out = arithmetic.fma(a, b, c)
    assert_bits_equal(out, _exact(a, b, c, np.float32), "ties")
    assert out[0] == np.float32(1 + 2.0 ** -23) and naive[0] != out[0]


@pytest.mark.parametrize("scale", [1.0, 2.0 ** -130, 2.0 ** 60])
def test_fp32_fma_is_the_exact_sum_rounded_once(scale):
    """Random operands whose products nearly cancel the addends, at normal, subnormal and large
    magnitudes (products overflowing fp32 included at the last)."""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(2000) * scale).astype(np.float32)
    b = rng.standard_normal(2000).astype(np.float32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(2000) * 2.0 ** -20)).astype(np.float32)
    expected = _exact(a, b, c, np.float32)
    finite = np.isfinite(expected)
    assert_bits_equal(arithmetic.fma(a, b, c)[finite], expected[finite], "random")


def test_scalars_and_broadcast_operands():
    a, b = np.float32(3.0), np.array([1.5, -2.0], np.float32)
    c = np.array(0.25, np.float32)
    assert_bits_equal(arithmetic.fma(np.asarray(a), np.asarray(np.float32(2.0)), c), np.asarray(np.float32(6.25)))
    assert_bits_equal(arithmetic.fma(np.broadcast_to(np.asarray(a), (2,)), b, np.broadcast_to(c, (2,))),
                      np.array([4.75, -5.75], np.float32))
