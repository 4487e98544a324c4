"""Floating-point contraction (compiler/passes/contract.py): with ``enable_fp_fusion`` (Triton's default)
an fp32 ``x * y + z`` is one fma, rounded once, where the CUDA backend's LLVM fuses it, on every
backend; checked bit for bit against each expression's fused form computed exactly (fractions, one
rounding per fma). tests/backends/cuda/test_cuda_contraction.py checks the same fusions in the CUDA
backend's PTX.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from helpers_contraction import BLOCK, SCALAR_CASE, expression_kernel as _expression
from helpers_elementwise import assert_bits_equal, round_exact


def _f32(x) -> Fraction:
    return Fraction(float(x))


def _fma(a, b, c) -> float:
    return round_exact(_f32(a) * _f32(b) + _f32(c), np.float32)


def _mul(a, b) -> float:
    return round_exact(_f32(a) * _f32(b), np.float32)


def _add(a, b) -> float:
    return round_exact(_f32(a) + _f32(b), np.float32)


# each case's results, element by element: (r, second), as LLVM's NVPTX fusion makes them
EXPECTED = {
    0: lambda a, b, c, d: (_fma(a, b, c), c),
    1: lambda a, b, c, d: (_fma(a, b, _mul(c, d)), c),
    2: lambda a, b, c, d: (_fma(a, b, c), _fma(a, b, d)),
    3: lambda a, b, c, d: (_fma(a, b, -c), c),
    4: lambda a, b, c, d: (_fma(-a, b, c), c),
    5: lambda a, b, c, d: (_fma(_mul(a, b), c, d), c),
    6: lambda a, b, c, d: (_fma(a, 2.0, b), c),
    7: lambda a, b, c, d: (_fma(a, b, -_mul(c, d)), c),
    8: lambda a, b, c, d: (_fma(a, b, c), _mul(a, b)),
    9: lambda a, b, c, d: (_fma(_fma(a, b, c), d, a), c),
    10: lambda a, b, c, d: (_fma(a, d, _fma(a, b, _mul(c, d))), c),
    11: lambda a, b, c, d: (_fma(b, c, a), c),
    12: lambda a, b, c, d: (_fma(-a, b, c), c),
    13: lambda a, b, c, d: (_fma(c, d, _mul(a, b)), _mul(a, b)),
}


def _inputs():
    """Operands whose products nearly cancel the addends, where one rounding and two differ."""
    rng = np.random.default_rng(5)
    a, b, d = (rng.standard_normal(BLOCK).astype(np.float32) * 3 for _ in range(3))
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(BLOCK) * 1e-3)).astype(np.float32)
    return a, b, c, d


def _run(case: int, **options):
    a, b, c, d = _inputs()
    out, out2 = np.full(BLOCK, np.nan, np.float32), np.full(BLOCK, np.nan, np.float32)
    _expression[(1,)](a, b, c, d, out, out2, CASE=case, BLOCK=BLOCK, **options)
    return (a, b, c, d), out, out2


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_multiply_adds_are_fused_where_the_gpu_fuses_them(backend, case):
    (a, b, c, d), out, out2 = _run(case, enable_fp_fusion=True)
    expected = [EXPECTED[case](*values) for values in zip(a, b, c, d)]
    assert_bits_equal(out, np.array([e[0] for e in expected], np.float32), f"case {case}")
    assert_bits_equal(out2, np.array([e[1] for e in expected], np.float32), f"case {case}, second output")
    fused = np.array([e[0] for e in expected], np.float32)
    if case in (0, 3, 4, 11, 12):  # the inputs make one rounding and two differ somewhere
        twice = {0: a * b + c, 3: a * b - c, 4: c - a * b, 11: a + b * c, 12: -(a * b) + c}[case]
        assert (fused != twice).any()


def test_a_scalar_product_added_to_a_block_is_fused(backend):
    (a, b, c, _), out, _ = _run(SCALAR_CASE, enable_fp_fusion=True)
    assert_bits_equal(out, np.array([_fma(a[0], b[0], x) for x in c], np.float32), "scalar product")


def test_without_fp_fusion_every_operation_rounds(backend):
    (a, b, c, d), out, _ = _run(1, enable_fp_fusion=False)
    assert_bits_equal(out, np.array([_add(_mul(x, y), _mul(z, w)) for x, y, z, w in zip(a, b, c, d)], np.float32),
                      "two roundings")
