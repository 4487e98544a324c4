"""Elementwise arithmetic and math, per dtype, against numpy / torch / mpmath oracles.

Tolerances (stated per test):
- +, -, *, / on any float dtype, integer ops, comparisons, where, min/max, floor/ceil,
  sqrt: bit-exact (IEEE correctly rounded; integers wrap as two's complement, as on a GPU);
- fp32 transcendental functions: within 1 ulp of the correctly rounded value (mpmath at
  120 bits is the reference);
- fp64 transcendental functions: within 1 ulp of mpmath;
- sigmoid (three fp32 roundings): within 4 ulp;
- fma: bit-exact against the exactly rounded a*b+c (fractions), i.e. a single rounding.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import textwrap
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

import cuda_accuracy
from hypothesis import HealthCheck, given, settings, strategies as st

import tritium as triton
import tritium.language as tl
from tritium.backends import registry
from helpers_elementwise import NP, assert_bits_equal, ieee_max, ieee_min, round_exact, ulp_distance_fp32

RNG_SEED = 1234
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy oracles on NaN


def rng():
    return np.random.default_rng(RNG_SEED)


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(out_ptr + offs, r, mask=m)


def run_binary(op: str, x: np.ndarray, y: np.ndarray, out_dtype, block: int = 128) -> np.ndarray:
    n = x.size
    out = np.zeros(n, out_dtype)
    binary_kernel[(triton.cdiv(n, block),)](x, y, out, n, OP=op, BLOCK=block)
    return out


# random operands ---------------------------------------------------------------------------------------
FLOAT_TYPES = ["fp16", "bf16", "fp32", "fp64"]
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def random_floats(name: str, n: int, r) -> np.ndarray:
    """Normal-ish values over several binades plus a few specials, stored in ``name``."""
    x = r.standard_normal(n) * np.exp2(r.integers(-8, 9, n))
    x[:6] = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf][:min(6, n)]
    return x.astype(NP[name])


def random_ints(name: str, n: int, r) -> np.ndarray:
    info = np.iinfo(NP[name])
    x = r.integers(info.min, info.max, n, dtype=NP[name], endpoint=True)
    extremes = [info.min, info.max, 0, 1, info.max - 1, info.min + 1]
    x[:6] = np.array(extremes, dtype=object).astype(NP[name])
    return x


N = 1000  # not a multiple of the block: the last program has a masked tail


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_float_arithmetic_is_correctly_rounded(dtype, op, backend):
    """Bit-exact against the fp64 result rounded once to the result type (fp64 itself: numpy).

    fp16 and bf16 division computes in fp32 (Triton's rule), so its result is fp32.
    Rounding fp64 to a type of p <= 24 bits gives the correctly rounded result (53 >= 2p+2).
    """
    r = rng()
    x, y = random_floats(dtype, N, r), random_floats(dtype, N, r)[::-1].copy()
    result = "fp32" if op == "div" and dtype in ("fp16", "bf16") else dtype
    out = run_binary(op, x, y, NP[result])
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    with np.errstate(all="ignore"):
        if result == "fp64":
            expected = fn(x, y)
        else:
            expected = fn(x.astype(np.float64), y.astype(np.float64)).astype(NP[result])
    if backend == "cuda" and op == "div" and result == "fp32":  # div.full.f32, as under Triton: within 2 ulp
        assert ulp_distance_fp32(out, expected.astype(np.float64)).max() <= 2
        return
    assert_bits_equal(out, expected, f"{dtype} {op}")


@pytest.mark.parametrize("dtype", ["fp32", "fp64", "fp16"])
def test_float_mod_is_fmod(dtype, backend):
    """x % y on floats is C's fmod (sign of the dividend), computed exactly; fp16 % computes in fp32."""
    x = np.array([7.5, -7.5, 7.5, -7.5, 5.0, 0.0, -0.0, 1e-3, 3.0, np.inf, 1.0], NP[dtype])
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 3.0, 1e-4, np.inf, 2.0, np.nan], NP[dtype])
    result = "fp32" if dtype == "fp16" else dtype
    out = run_binary("mod", x, y, NP[result], block=16)
    with np.errstate(all="ignore"):
        expected = np.fmod(x.astype(NP[result]), y.astype(NP[result]))
    assert_bits_equal(out, expected, f"{dtype} fmod")
    # torch.fmod is a second, independent opinion
    t = torch.fmod(torch.from_numpy(x.astype(NP[result])), torch.from_numpy(y.astype(NP[result]))).numpy()
    assert_bits_equal(out, t, f"{dtype} fmod vs torch")


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_integer_arithmetic_wraps(dtype, op, backend):
    """Two's complement wrap-around, as C's unsigned arithmetic and the GPU's add/sub/mul.lo do."""
    r = rng()
    x, y = random_ints(dtype, N, r), random_ints(dtype, N, r)[::-1].copy()
    out = run_binary(op, x, y, NP[dtype])
    bits = np.iinfo(NP[dtype]).bits
    pyop = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}[op]
    wrapped = [pyop(int(a), int(b)) % 2**bits for a, b in zip(x, y)]
    expected = np.array(wrapped, dtype=object).astype(np.uint64).astype(NP[dtype])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "int64"])
def test_integer_true_division_is_fp32(dtype):
    r = rng()
    x = random_ints(dtype, N, r)
    y = random_ints(dtype, N, r)[::-1].copy()
    y[y == 0] = 3
    out = run_binary("div", x, y, np.float32)
    with np.errstate(all="ignore"):
        expected = x.astype(np.float32) / y.astype(np.float32)
    if cuda_accuracy.on_cuda():  # `/` on fp32 is div.full.f32 there, as under Triton: within 2 ulp
        assert ulp_distance_fp32(out, expected.astype(np.float64)).max() <= 2
        return
    assert_bits_equal(out, expected, "int / int")


def c_div(a: int, b: int) -> int:
    """C's integer division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - b * c_div(a, b)


def test_int8_floordiv_and_mod_truncate_all_pairs():
    """Every int8 pair (except the division by zero and -128 // -1): C's truncation toward zero."""
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    keep = (b != 0) & ~((a == -128) & (b == -1))
    x, y = a[keep].astype(np.int8), b[keep].astype(np.int8)
    q = run_binary("floordiv", x, y, np.int8, block=1024)
    m = run_binary("mod", x, y, np.int8, block=1024)
    np.testing.assert_array_equal(q, [c_div(int(i), int(j)) for i, j in zip(x, y)])
    np.testing.assert_array_equal(m, [c_mod(int(i), int(j)) for i, j in zip(x, y)])
    # the examples everyone gets wrong
    small = np.array([-7, 7, -7, 7], np.int8), np.array([2, -2, -2, 2], np.int8)
    np.testing.assert_array_equal(run_binary("floordiv", *small, np.int8, block=4), [-3, -3, 3, 3])
    np.testing.assert_array_equal(run_binary("mod", *small, np.int8, block=4), [-1, 1, -1, 1])


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_floordiv_and_mod_truncate(dtype):
    r = rng()
    x = random_ints(dtype, N, r)
    y = random_ints(dtype, N, r)[::-1].copy() >> r.integers(0, 8, N).astype(NP[dtype])
    y[y == 0] = 7
    if dtype.startswith("int"):
        info = np.iinfo(NP[dtype])
        y[(x == info.min) & (y == -1)] = 2  # overflow: undefined in C
    q = run_binary("floordiv", x, y, NP[dtype])
    m = run_binary("mod", x, y, NP[dtype])
    np.testing.assert_array_equal(q, np.array([c_div(int(a), int(b)) for a, b in zip(x, y)], dtype=object)
                                  .astype(NP[dtype]))
    np.testing.assert_array_equal(m, np.array([c_mod(int(a), int(b)) for a, b in zip(x, y)], dtype=object)
                                  .astype(NP[dtype]))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_floordiv_by_zero_is_all_ones(dtype):
    """x // 0 gives all ones (-1 signed, the maximum unsigned), as an H200 was measured to do."""
    x = np.array([5, 0, 1, 100], NP[dtype])
    y = np.zeros(4, NP[dtype])
    q = run_binary("floordiv", x, y, NP[dtype], block=4)
    np.testing.assert_array_equal(q, np.full(4, -1).astype(NP[dtype]))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_shifts(dtype):
    """<< and >> with in-range amounts; >> is arithmetic for signed types and logical for unsigned."""
    r = rng()
    bits = np.iinfo(NP[dtype]).bits
    x = random_ints(dtype, N, r)
    s = r.integers(0, bits, N).astype(NP[dtype])
    left = run_binary("shl", x, s, NP[dtype])
    right = run_binary("shr", x, s, NP[dtype])
    exp_left = [(int(a) << int(k)) % 2**bits for a, k in zip(x, s)]
    np.testing.assert_array_equal(left, np.array(exp_left, dtype=object).astype(np.uint64).astype(NP[dtype]))
    np.testing.assert_array_equal(right, [int(a) >> int(k) for a, k in zip(x, s)])  # Python >> is arithmetic


@pytest.mark.parametrize("dtype", ["int1", "int8", "int32", "uint16", "int64", "uint64"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(dtype, op):
    r = rng()
    if dtype == "int1":
        x, y = r.integers(0, 2, N).astype(bool), r.integers(0, 2, N).astype(bool)
    else:
        x, y = random_ints(dtype, N, r), random_ints(dtype, N, r)[::-1].copy()
    out = run_binary(op, x, y, NP[dtype])
    pyop = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[op]
    np.testing.assert_array_equal(out, [pyop(int(a), int(b)) for a, b in zip(x, y)])


@triton.jit
def invert_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, ~tl.load(x_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "uint64"])
def test_invert(dtype):
    x = random_ints(dtype, N, rng())
    out = np.zeros_like(x)
    invert_kernel[(triton.cdiv(N, 256),)](x, out, N, BLOCK=256)
    bits = np.iinfo(NP[dtype]).bits
    np.testing.assert_array_equal(out, np.array([(~int(a)) % 2**bits for a in x], dtype=object)
                                  .astype(np.uint64).astype(NP[dtype]))


def test_int1_arithmetic_is_modulo_two():
    """i1 + i1 wraps like any LLVM integer: True + True == False, True - False == True, -True == True."""
    x = np.array([False, False, True, True])
    y = np.array([False, True, False, True])
    np.testing.assert_array_equal(run_binary("add", x, y, np.bool_, block=4), x ^ y)
    np.testing.assert_array_equal(run_binary("sub", x, y, np.bool_, block=4), x ^ y)
    np.testing.assert_array_equal(run_binary("mul", x, y, np.bool_, block=4), x & y)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp64", "int8", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons(dtype, op):
    """Comparisons give int1; NaN compares unequal and unordered (ordered predicates, une for !=)."""
    r = rng()
    if dtype in FLOAT_TYPES:
        x = random_floats(dtype, N, r)
        y = x.copy()
        y[::3] = random_floats(dtype, N, r)[::3]
        x[7], y[8], x[9], y[9] = np.nan, np.nan, np.nan, np.nan
    else:
        x = random_ints(dtype, N, r)
        y = x.copy()
        y[::2] = random_ints(dtype, N, r)[::-1][::2]
    out = run_binary(op, x, y, np.bool_)
    fn = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
          "ne": np.not_equal}[op]
    np.testing.assert_array_equal(out, fn(x, y))


@pytest.mark.parametrize("dtype", ["fp16", "fp32", "fp64"])
def test_maximum_minimum_order_signed_zeros(dtype):
    """IEEE 754-2019: -0 < +0, so max(+0, -0) is +0 and min(+0, -0) is -0, in either order."""
    x = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0], NP[dtype])
    y = np.array([-0.0, 0.0, 0.0, -0.0, -0.0, 0.0, 2.0, -2.0], NP[dtype])
    assert_bits_equal(run_binary("maximum", x, y, NP[dtype], block=8), ieee_max(x, y), "maximum")
    assert_bits_equal(run_binary("minimum", x, y, NP[dtype], block=8), ieee_min(x, y), "minimum")
    assert np.signbit(ieee_max(x, y)).tolist() == [False, False, False, True, False, False, False, True]


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp64"])
def test_maximum_minimum_ignore_nan_by_default(dtype):
    x = np.array([1.0, np.nan, np.nan, -2.0, np.inf, -np.inf, 3.0, 0.5], NP[dtype])
    y = np.array([np.nan, 2.0, np.nan, -3.0, 1.0, 1.0, 3.0, 0.25], NP[dtype])
    assert_bits_equal(run_binary("maximum", x, y, NP[dtype], block=8), np.fmax(x, y), "maximum")
    assert_bits_equal(run_binary("minimum", x, y, NP[dtype], block=8), np.fmin(x, y), "minimum")
    # with propagate_nan=ALL a NaN operand wins
    assert_bits_equal(run_binary("maximum_nan", x, y, NP[dtype], block=8), np.maximum(x, y), "maximum ALL")
    assert_bits_equal(run_binary("minimum_nan", x, y, NP[dtype], block=8), np.minimum(x, y), "minimum ALL")


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64", "uint64"])
def test_maximum_minimum_integers(dtype):
    r = rng()
    x, y = random_ints(dtype, N, r), random_ints(dtype, N, r)[::-1].copy()
    np.testing.assert_array_equal(run_binary("maximum", x, y, NP[dtype]), np.maximum(x, y))
    np.testing.assert_array_equal(run_binary("minimum", x, y, NP[dtype]), np.minimum(x, y))


# where, clamp, abs -----------------------------------------------------------------------------------------
@triton.jit
def where_kernel(c_ptr, x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    c = tl.load(c_ptr + offs, mask=m, other=0)
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(c, x, y), mask=m)


@triton.jit
def where_scalar_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.5), mask=m)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "int64", "uint8"])
def test_where(dtype):
    r = rng()
    c = r.integers(-2, 3, N).astype(np.int32)  # any non-zero value counts as true
    make = random_floats if dtype.startswith("fp") else random_ints
    x, y = make(dtype, N, r), make(dtype, N, r)
    out = np.zeros(N, NP[dtype])
    where_kernel[(triton.cdiv(N, 128),)](c, x, y, out, N, BLOCK=128)
    assert_bits_equal(out, np.where(c != 0, x, y), "where")


def test_where_with_scalar_keeps_the_tensor_type():
    x = np.array([-1.0, 2.0, np.nan, 0.0, 3.25], np.float16)
    out = np.zeros(5, np.float16)
    where_scalar_kernel[(1,)](x, out, 5, BLOCK=8)
    assert_bits_equal(out, np.where(x > 0, x, np.float16(0.5)), "where scalar")


@triton.jit
def clamp_kernel(x_ptr, lo_ptr, hi_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.clamp(x, tl.load(lo_ptr + offs, mask=m), tl.load(hi_ptr + offs, mask=m)), mask=m)


@triton.jit
def clamp_const_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.clamp(tl.load(x_ptr + offs, mask=m), -1.0, 2.0), mask=m)


@pytest.mark.parametrize("dtype", ["fp32", "fp64", "fp16", "bf16"])
def test_clamp(dtype):
    r = rng()
    x = random_floats(dtype, N, r)
    lo = (-np.abs(random_floats(dtype, N, r))).astype(NP[dtype])
    hi = np.abs(random_floats(dtype, N, r)).astype(NP[dtype])
    lo[lo == 0], hi[hi == 0] = -1, 1  # min/max of +0.0 and -0.0 may give either zero
    out = np.zeros(N, NP[dtype])
    clamp_kernel[(triton.cdiv(N, 128),)](x, lo, hi, out, N, BLOCK=128)
    expected = torch.clamp(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(lo.astype(np.float64)),
                           torch.from_numpy(hi.astype(np.float64))).numpy().astype(NP[dtype])
    assert_bits_equal(out, expected, "clamp")
    out2 = np.zeros(N, NP[dtype])
    clamp_const_kernel[(triton.cdiv(N, 256),)](x, out2, N, BLOCK=256)
    assert_bits_equal(out2, np.clip(x.astype(np.float64), -1.0, 2.0).astype(NP[dtype]), "clamp constants")


@triton.jit
def int_clamp_constant_kernel(x_ptr, out_ptr, n, LO: tl.constexpr, HI: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = tl.clamp(x, LO, HI)
    tl.static_assert(r.dtype == x.dtype)  # Python numbers take the tensor's type, as in tl.maximum
    tl.store(out_ptr + offs, r, mask=m)


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_integer_clamp(dtype, backend):
    """tl.clamp on integers (Triton 3.9): minimum(maximum(x, lo), hi), compared by the dtype's
    signedness (an unsigned value with its top bit set is large); lo > hi gives hi. Exact."""
    r = rng()
    x, lo, hi = random_ints(dtype, N, r), random_ints(dtype, N, r)[::-1].copy(), random_ints(dtype, N, r)
    info = np.iinfo(NP[dtype])
    lo[6:12], hi[6:12] = info.min, info.max  # no-op bounds
    x[12:16], lo[12:16], hi[12:16] = x[16:20], x[16:20], x[16:20]  # x on both bounds
    out = np.zeros(N, NP[dtype])
    clamp_kernel[(triton.cdiv(N, 128),)](x, lo, hi, out, N, BLOCK=128)
    assert_bits_equal(out, np.minimum(np.maximum(x, lo), hi), "integer clamp")
    assert (lo > hi).any() and (out[lo > hi] == hi[lo > hi]).all()
    low, high = (3, 100) if dtype.startswith("u") else (-100, 3)
    out2 = np.zeros(N, NP[dtype])
    int_clamp_constant_kernel[(triton.cdiv(N, 256),)](x, out2, N, LO=low, HI=high, BLOCK=256)
    assert_bits_equal(out2, np.clip(x, low, high).astype(NP[dtype]), "integer clamp, constant bounds")


def test_integer_clamp_of_mixed_widths_clamps_in_the_wider_type(backend):
    """int8 values with int32 bounds: promoted as tl.maximum(x, lo) and tl.minimum(..., hi) promote."""
    x = np.array([-128, -5, 0, 7, 127, 100, -100, 3], np.int8)
    lo = np.array([-1000, 0, 1, -3, 500, -2**31, 2**31 - 1, 5], np.int32)
    hi = np.array([-200, 10, 2, 5, 600, 2**31 - 1, -2**31, 4], np.int32)
    out = np.zeros(8, np.int32)
    clamp_kernel[(1,)](x, lo, hi, out, 8, BLOCK=8)
    assert_bits_equal(out, np.minimum(np.maximum(x.astype(np.int32), lo), hi), "mixed-width clamp")


def test_clamp_of_pointers_is_refused():
    @triton.jit
    def pointer_clamp(x_ptr, BLOCK: tl.constexpr):
        tl.clamp(x_ptr, x_ptr, x_ptr)

    with pytest.raises(triton.CompilationError, match="not defined for"):
        pointer_clamp[(1,)](np.zeros(4, np.int32), BLOCK=4)


@triton.jit
def abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.abs(tl.load(x_ptr + offs, mask=m)), mask=m)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp64", "int8", "int32", "int64", "uint16"])
def test_abs(dtype):
    r = rng()
    x = random_floats(dtype, N, r) if dtype.startswith(("fp", "bf")) else random_ints(dtype, N, r)
    if dtype.startswith(("fp", "bf")):
        x[10] = np.nan
    out = np.zeros_like(x)
    abs_kernel[(triton.cdiv(N, 256),)](x, out, N, BLOCK=256)
    if dtype.startswith("int"):
        bits = np.iinfo(NP[dtype]).bits
        expected = np.array([abs(int(v)) % 2**bits for v in x], dtype=object).astype(np.uint64).astype(NP[dtype])
        np.testing.assert_array_equal(out, expected)  # abs(INT_MIN) wraps to INT_MIN
    else:
        assert_bits_equal(out, np.abs(x), "abs")  # clears the sign bit, -0.0 -> 0.0


# math functions --------------------------------------------------------------------------------------------
@triton.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "log":
        r = tl.log(x)
    elif FN == "log2":
        r = tl.log2(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    elif FN == "method_exp":
        r = x.exp()
    else:
        tl.static_assert(False, "unknown function")
    tl.store(out_ptr + offs, r, mask=m)


def run_unary(fn: str, x: np.ndarray, block: int = 256) -> np.ndarray:
    out = np.zeros_like(x)
    unary_kernel[(triton.cdiv(x.size, block),)](x, out, x.size, FN=fn, BLOCK=block)
    return out


mpmath.mp.prec = 120
MP = {
    "exp": mpmath.exp, "exp2": lambda v: mpmath.power(2, v), "log": mpmath.log, "log2": lambda v: mpmath.log(v, 2),
    "sqrt": mpmath.sqrt, "sqrt_rn": mpmath.sqrt, "rsqrt": lambda v: 1 / mpmath.sqrt(v), "sin": mpmath.sin,
    "cos": mpmath.cos, "erf": mpmath.erf, "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v)),
}
DOMAINS = {
    "exp": (-80.0, 80.0), "exp2": (-120.0, 120.0), "log": (1e-30, 1e30), "log2": (1e-30, 1e30),
    "sqrt": (0.0, 1e30), "sqrt_rn": (0.0, 1e30), "rsqrt": (1e-30, 1e30), "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0), "erf": (-5.0, 5.0), "sigmoid": (-20.0, 20.0),
}
MATH_N = 300


def math_inputs(fn: str, dtype) -> np.ndarray:
    lo, hi = DOMAINS[fn]
    r = rng()
    if lo > 0:  # spread over binades
        x = np.exp(r.uniform(np.log(lo), np.log(hi), MATH_N))
    elif lo == 0.0:
        x = np.exp(r.uniform(-60, 60, MATH_N))
        x[0] = 0.0
    else:
        x = r.uniform(lo, hi, MATH_N)
    return x.astype(dtype)


def reference(fn: str, x: np.ndarray) -> np.ndarray:
    """The function at 120 bits, rounded to fp64."""
    return np.array([float(MP[fn](mpmath.mpf(float(v)))) if np.isfinite(v) else np.nan for v in x])


@pytest.mark.parametrize("fn", ["exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf"])
def test_fp32_math_within_one_ulp(fn):
    x = math_inputs(fn, np.float32)
    out = run_unary(fn, x)
    assert out.dtype == np.float32
    ulps = ulp_distance_fp32(out, reference(fn, x))
    if cuda_accuracy.on_cuda():  # Triton's instructions and libdevice, within their documented bounds
        bound = cuda_accuracy.exp_ulps(x) if fn == "exp" else cuda_accuracy.FP32_MATH_ULPS[fn]
        assert (ulps <= bound).all(), f"{fn}: {ulps.max()} ulp at x={x[ulps.argmax()]!r}"
        return
    assert ulps.max() <= 1, f"{fn}: {ulps.max()} ulp at x={x[ulps.argmax()]!r}"
    if fn in ("sqrt", "sqrt_rn"):  # sqrt is correctly rounded: exact
        assert ulps.max() == 0


@pytest.mark.parametrize("fn", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf"])
def test_fp64_math_within_one_ulp(fn):
    x = math_inputs(fn, np.float64)
    out = run_unary(fn, x)
    assert out.dtype == np.float64
    ref = reference(fn, x)
    err = np.abs(out - ref)
    tol = np.spacing(np.abs(ref)) * (cuda_accuracy.FP64_MATH_ULPS[fn] if cuda_accuracy.on_cuda() else 1)
    assert (err <= tol).all(), f"{fn}: {np.max(err / np.spacing(np.abs(ref)))} ulp"


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
@pytest.mark.parametrize("fn", ["floor", "ceil"])
def test_floor_ceil_exact(fn, dtype):
    r = rng()
    x = (r.standard_normal(MATH_N) * 100).astype(NP[dtype])
    x[:6] = [-0.5, 0.5, -0.0, 2.0**30 + 0.5, -(2.0**24), np.inf]
    out = run_unary(fn, x)
    expected = (np.floor if fn == "floor" else np.ceil)(x)
    assert_bits_equal(out, expected, fn)  # includes ceil(-0.5) == -0.0 and floor(-0.0) == -0.0
    pyfn = math.floor if fn == "floor" else math.ceil
    assert [float(v) for v in out[7:]] == [float(pyfn(v)) for v in x[7:]]  # Python's own opinion


def _libm_rounded(fn, v: float) -> float:
    try:
        return fn(v)
    except OverflowError:
        return math.inf


@pytest.mark.not_on_backend("cuda", reason="its approximate instructions flush subnormal results "
                            "(test_fp32_math_within_one_ulp holds them to their bounds)")
@pytest.mark.parametrize("fn", ["exp", "exp2", "erf"])
def test_fp32_math_near_its_thresholds(fn, backend, fresh_cpu_optimizer_queue):
    """fp32 exp/exp2/erf of the host backends' math library within 1 ulp of C's fp64 function rounded
    once (correctly rounded here), across the range where the result goes from 0 through subnormals to
    inf (exp, exp2) or to +-1 (erf), and exactly at the thresholds (0, inf, +-1 where the rounded
    reference is). Oracle: Python's math module (the C library) in fp64. (A GPU's approximate
    instructions flush subnormal results: test_fp32_math_within_one_ulp holds them to their bounds.)"""
    r = rng()
    low, high = {"exp": (-105.0, 89.0), "exp2": (-151.0, 128.5), "erf": (-5.0, 5.0)}[fn]
    x = np.concatenate([r.uniform(low, high, 20_000), r.standard_normal(5_000) * 4,
                        [88.72283, 88.72284, -87.33654, -103.97208, 127.99999, 128.0, -126.0, -149.0, -149.5, -150.0,
                         1e-30, -1e-30, 0.0, -0.0, 1e30, -1e30]]).astype(np.float32)
    ref_fn = {"exp": math.exp, "exp2": math.exp2, "erf": math.erf}[fn]
    with np.errstate(over="ignore"):  # results just past fp32's largest round to inf
        expected = np.array([_libm_rounded(ref_fn, float(v)) for v in x]).astype(np.float32)
    unary_kernel.cache.clear()  # compiled here, so that its optimized code is this test's to wait for
    results = [run_unary(fn, x, block=1024)]
    if backend == "cpu":  # its quick code, then its optimized code
        assert registry.get("cpu").wait_for_optimized_code(timeout=120)
        results.append(run_unary(fn, x, block=1024))
    for got in results:
        ulps = ulp_distance_fp32(got, expected.astype(np.float64))
        assert ulps.max() <= 1, f"{fn}: {ulps.max()} ulp at x={x[ulps.argmax()]!r}"
        exact = np.isinf(expected) | (expected == 0) | (np.abs(expected) == 1)
        assert_bits_equal(got[exact], expected[exact], fn)


def test_math_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1.0], np.float32)
    with np.errstate(all="ignore"):
        for fn, ref in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("log2", np.log2),
                        ("rsqrt", lambda v: 1.0 / np.sqrt(v)), ("exp2", np.exp2), ("erf", torch.special.erf)):
            # evaluated in fp64 (torch for erf) and rounded once: the specials are exact either way
            wide = ref(torch.from_numpy(x.astype(np.float64))) if fn == "erf" else ref(x.astype(np.float64))
            expected = np.asarray(wide).astype(np.float32)
            got = run_unary(fn, x, block=8)
            assert_bits_equal(got[:5], expected[:5], fn)  # inf, -inf, nan, +0, -0: exact on every backend
            if np.isnan(expected[5]):
                assert np.isnan(got[5]), fn
            else:  # -1: within the ulp bound of a compiled backend's polynomial
                assert ulp_distance_fp32(got[5:], expected[5:]).max() <= 1, fn


def test_sigmoid_fp32_and_fp64():
    x = math_inputs("sigmoid", np.float32)
    out = run_unary("sigmoid", x)
    ref = reference("sigmoid", x)
    # ex2.approx and div.full on a GPU (Triton's instructions): a few ulp more
    assert ulp_distance_fp32(out, ref).max() <= (16 if cuda_accuracy.on_cuda() else 4)
    x64 = math_inputs("sigmoid", np.float64)
    out64 = run_unary("sigmoid", x64)
    np.testing.assert_allclose(out64, reference("sigmoid", x64), rtol=4 * 2.0**-52, atol=0)


def test_tensor_method_exp():
    x = math_inputs("exp", np.float32)
    assert_bits_equal(run_unary("method_exp", x), run_unary("exp", x), "x.exp()")


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("fn", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor",
                                "ceil", "sigmoid"])
def test_math_on_half_types_is_a_compile_error(fn, dtype):
    x = np.ones(4, NP[dtype])
    with pytest.raises(triton.CompilationError) as info:
        unary_kernel[(1,)](x, np.zeros(4, NP[dtype]), 4, FN=fn, BLOCK=4)
    assert f"Expected dtype ['fp32', 'fp64'] but got {dtype}" in str(info.value)
    assert "test_elementwise.py" in str(info.value)  # points at the kernel's line


# fma -------------------------------------------------------------------------------------------------------
@triton.jit
def fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.fma(a, b, c), mask=m)


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_fma_rounds_once(dtype):
    r = rng()
    n = 200
    a = (r.standard_normal(n) * 4).astype(NP[dtype])
    b = (r.standard_normal(n) * 4).astype(NP[dtype])
    c = -(a.astype(np.float64) * b.astype(np.float64)).astype(NP[dtype])  # cancellation exposes the rounding
    c[::2] = (r.standard_normal(n // 2) * 1e-3).astype(NP[dtype])
    # a case that double rounding (product+sum in fp64, then fp32) gets wrong: exact 1 - 2**-25 - 2**-55
    if dtype == "fp32":
        a[0], b[0], c[0] = -62525 * 2.0**-27, 17173 * 2.0**-28, 1.0
    out = np.zeros(n, NP[dtype])
    fma_kernel[(triton.cdiv(n, 64),)](a, b, c, out, n, BLOCK=64)
    expected = np.array([round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), NP[dtype])
                         for x, y, z in zip(a, b, c)], NP[dtype])
    assert_bits_equal(out, expected, f"fma {dtype}")


# cdiv ------------------------------------------------------------------------------------------------------
@triton.jit
def cdiv_kernel(x_ptr, out_ptr, n, D: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.cdiv(tl.load(x_ptr + offs, mask=m), D), mask=m)


@triton.jit
def cdiv_const_kernel(out_ptr, A: tl.constexpr, D: tl.constexpr):
    tl.static_assert(tl.cdiv(A, D) == (A + D - 1) // D)
    tl.store(out_ptr, tl.cdiv(A, D))


@pytest.mark.parametrize("d", [1, 3, 16, 1000])
def test_cdiv(d):
    x = np.arange(0, 5000, 7, dtype=np.int32)
    out = np.zeros_like(x)
    cdiv_kernel[(triton.cdiv(x.size, 256),)](x, out, x.size, D=d, BLOCK=256)
    np.testing.assert_array_equal(out, [-(-int(v) // d) for v in x])
    c = np.zeros(1, np.int32)
    cdiv_const_kernel[(1,)](c, A=1000, D=d)
    assert c[0] == math.ceil(1000 / d)


# masks, tails, other= ----------------------------------------------------------------------------------------
@triton.jit
def masked_add_kernel(x_ptr, y_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=OTHER)
    y = tl.load(y_ptr + offs, mask=m, other=OTHER)
    s = tl.sum(tl.where(m, 0.0, x + y), axis=0)  # the masked lanes hold OTHER + OTHER
    tl.store(out_ptr + offs, x + y, mask=m)
    tl.store(out_ptr + n + tl.program_id(0), s)


@pytest.mark.parametrize("n,block", [(1, 16), (15, 16), (17, 16), (1000, 128), (4096, 1024)])
def test_masked_tails_and_other(n, block):
    r = rng()
    programs = triton.cdiv(n, block)
    x = r.standard_normal(n).astype(np.float32)
    y = r.standard_normal(n).astype(np.float32)
    out = np.full(n + programs + 3, -777.0, np.float32)  # sentinels after the data
    masked_add_kernel[(programs,)](x, y, out, n, OTHER=2.5, BLOCK=block)
    assert_bits_equal(out[:n], x + y, "masked add")
    masked_lanes = np.array([max(0, (p + 1) * block - n) for p in range(programs)], np.float32)
    np.testing.assert_array_equal(out[n:n + programs], masked_lanes * 5.0)
    np.testing.assert_array_equal(out[n + programs:], -777.0)


# property: random fp32 expressions are bit-exact against numpy -----------------------------------------------
def _expr(draw, depth: int) -> tuple[str, str, bool]:
    """An expression as (kernel source, numpy source, is_constant) over x0..x3.

    No operator gets two constants: in a kernel those fold in Python, in double precision.
    """
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            i = draw(st.integers(0, 3))
            return f"x{i}", f"x{i}", False
        c = draw(st.sampled_from([0.5, -1.25, 3.0, 1e-3, 2.0**-20, 65504.0]))
        return repr(c), f"np.float32({c!r})", True
    op = draw(st.sampled_from(["+", "-", "*", "max", "min", "where"]))
    a_k, a_n, a_const = _expr(draw, depth - 1)
    b_k, b_n, b_const = _expr(draw, depth - 1)
    if a_const and b_const:
        i = draw(st.integers(0, 3))
        b_k, b_n = f"x{i}", f"x{i}"
    if op in "+-*":
        return f"({a_k} {op} {b_k})", f"({a_n} {op} {b_n})", False
    if op == "max":
        return f"tl.maximum({a_k}, {b_k})", f"ieee_max({a_n}, {b_n})", False
    if op == "min":
        return f"tl.minimum({a_k}, {b_k})", f"ieee_min({a_n}, {b_n})", False
    c_k, c_n, c_const = _expr(draw, depth - 1)
    if a_const and c_const:
        c_k, c_n = "x3", "x3"
    return f"tl.where({a_k} > {c_k}, {a_k}, {b_k})", f"np.where({a_n} > {c_n}, {a_n}, {b_n})", False


@st.composite
def expressions(draw):
    kernel_src, numpy_src, constant = _expr(draw, 4)
    if constant:
        kernel_src, numpy_src = f"({kernel_src} + x0)", f"({numpy_src} + x0)"
    return kernel_src, numpy_src


_KERNEL_TEMPLATE = '''
import tritium as triton
import tritium.language as tl


@triton.jit
def expr_kernel(p0, p1, p2, p3, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x0 = tl.load(p0 + offs, mask=m)
    x1 = tl.load(p1 + offs, mask=m)
    x2 = tl.load(p2 + offs, mask=m)
    x3 = tl.load(p3 + offs, mask=m)
    r = {expr}
    tl.store(out_ptr + offs, r, mask=m)
'''

_module_counter = itertools.count()


@triton.jit
def _multiply_add(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(y_ptr + offs) + tl.load(z_ptr + offs))


def test_fp_fusion_decides_one_or_two_roundings(backend, monkeypatch):
    """-1.25 * 9500294 + 0.5: the product rounds (to even) to -11875368 and the sum rounds back
    to it; one fma rounds the exact -11875367 once. enable_fp_fusion=False gives numpy's two
    roundings on every backend; by default every backend contracts, as Triton does."""
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)  # Triton's default: contraction on
    x, y, z = (np.full(16, v, np.float32) for v in (-1.25, 9500294.0, 0.5))
    two_roundings = x * y + z
    one_rounding = (x.astype(np.float64) * y + z).astype(np.float32)
    assert two_roundings[0] == -11875368.0 and one_rounding[0] == -11875367.0
    out = np.zeros(16, np.float32)
    _multiply_add[(1,)](x, y, z, out, BLOCK=16, enable_fp_fusion=False)
    assert_bits_equal(out, two_roundings, "enable_fp_fusion=False")
    out = np.full(16, np.nan, np.float32)
    _multiply_add[(1,)](x, y, z, out, BLOCK=16)
    assert_bits_equal(out, one_rounding, "enable_fp_fusion default")


def load_expression_kernel(directory, expr: str):
    path = directory / f"expr_kernel_{next(_module_counter)}.py"
    path.write_text(textwrap.dedent(_KERNEL_TEMPLATE).format(expr=expr))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.expr_kernel


fp32_values = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=expressions(), data=st.lists(fp32_values, min_size=4 * 37, max_size=4 * 37))
def test_random_fp32_expressions_bit_exact(tmp_path_factory, expr, data):
    kernel_src, numpy_src = expr
    directory = tmp_path_factory.getbasetemp()
    kernel = load_expression_kernel(directory, kernel_src)
    x0, x1, x2, x3 = np.array(data, np.float32).reshape(4, 37)
    out = np.zeros(37, np.float32)
    # without contraction (a GPU backend's default fuses x * y + z into one fma, as Triton does):
    # every operation rounded once, as numpy's
    kernel[(3,)](x0, x1, x2, x3, out, 37, BLOCK=16, enable_fp_fusion=False)
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(eval(numpy_src, {"np": np, "ieee_max": ieee_max, "ieee_min": ieee_min,
                                               "x0": x0, "x1": x1, "x2": x2, "x3": x3}), (37,))
    assert_bits_equal(out, expected.astype(np.float32), kernel_src)


def test_compiled_math_loops_build_on_this_platform():
    """llvmlite is a dependency, so the compiled loops must build here: a mistake in their IR would
    otherwise fall back to the slower C-library path silently (with the same numbers)."""
    from tritium.numerics import arithmetic as numerics, vector_math

    for name in ("erf", "exp", "exp2"):
        assert vector_math.fp32_loop(name) is not None, name
    assert numerics._WIDENING.get("fp16_to_fp32") is not None
