"""tl.extra.libdevice against mpmath (80-bit), exact rational arithmetic, C99 special values, and
values recorded from Triton 3.6 on an H200.

Tolerances: fp32 results are computed in fp64 and rounded once, or by the math library's vector
polynomials (within 1 ulp of the correctly rounded result), so transcendental functions are
within 1 ulp of the mpmath value (0 ulp where the result is exact: rounding, division, square
root, fmod, fma...); fp64 results come from numpy/libm and are within 2 ulp (4 for erfc, lgamma
and tgamma, which go through Python's math module). Subnormal fp32 arguments and results follow
what the H200 did (libdevice in flush-to-zero mode) exactly.
"""
from __future__ import annotations

import importlib
import math
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import cuda_accuracy
import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError
from tritium.language.extra import libdevice

mpmath.mp.prec = 80
N = 256


# ------------------------------------------------------------------------------------------------
# kernels: one libdevice function, chosen by name
# ------------------------------------------------------------------------------------------------
@triton.jit
def _unary_kernel(x_ptr, o_ptr, N: tl.constexpr, FN: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, getattr(libdevice, FN)(tl.load(x_ptr + r)))


@triton.jit
def _binary_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr, FN: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, getattr(libdevice, FN)(tl.load(x_ptr + r), tl.load(y_ptr + r)))


@triton.jit
def _fma_kernel(x_ptr, y_ptr, z_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, libdevice.fma(tl.load(x_ptr + r), tl.load(y_ptr + r), tl.load(z_ptr + r)))


def unary(name, x, out_dtype=None):
    x = np.ascontiguousarray(x)
    out = np.zeros(x.shape, dtype=out_dtype or x.dtype)
    _unary_kernel[(1,)](x, out, N=x.size, FN=name)
    return out


def binary(name, x, y, out_dtype=None):
    out = np.zeros(x.shape, dtype=out_dtype or x.dtype)
    _binary_kernel[(1,)](np.ascontiguousarray(x), np.ascontiguousarray(y), out, N=x.size, FN=name)
    return out


def uniform(lo, hi, dtype, seed=0, n=N):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)


def log_uniform(lo_exp, hi_exp, dtype, seed=0, signed=False, n=N):
    g = np.random.default_rng(seed)
    x = 10.0 ** g.uniform(lo_exp, hi_exp, n)
    if signed:
        x *= g.choice([-1.0, 1.0], n)
    return x.astype(dtype)


def mp_ref(fn, xs, dtype):
    """fn in 80-bit arithmetic, rounded to dtype (via fp64: at most one extra half-ulp for fp32)."""
    return np.array([float(fn(*(mpmath.mpf(float(v)) for v in args))) for args in zip(*xs)], dtype=np.float64) \
        .astype(dtype)


# ------------------------------------------------------------------------------------------------
# one-argument functions against mpmath
# ------------------------------------------------------------------------------------------------
UNARY = {
    # name: (mpmath function, argument sampler(dtype, seed))
    "tanh": (mpmath.tanh, lambda d, s: uniform(-10, 10, d, s)),
    "erf": (mpmath.erf, lambda d, s: uniform(-4, 4, d, s)),
    "erfc": (mpmath.erfc, lambda d, s: uniform(-3, 9, d, s)),
    "exp": (mpmath.exp, lambda d, s: uniform(-80, 80, d, s)),
    "exp2": (lambda v: mpmath.power(2, v), lambda d, s: uniform(-120, 120, d, s)),
    "exp10": (lambda v: mpmath.power(10, v), lambda d, s: uniform(-35, 35, d, s)),
    "expm1": (mpmath.expm1, lambda d, s: log_uniform(-8, 1.3, d, s, signed=True)),
    "log": (mpmath.log, lambda d, s: log_uniform(-30, 30, d, s)),
    "log1p": (mpmath.log1p, lambda d, s: np.concatenate([uniform(-0.99, 100, d, s, N // 2),
                                                         log_uniform(-9, -1, d, s, True, N // 2)])),
    "log2": (lambda v: mpmath.log(v, 2), lambda d, s: log_uniform(-30, 30, d, s)),
    "log10": (mpmath.log10, lambda d, s: log_uniform(-30, 30, d, s)),
    "sqrt": (mpmath.sqrt, lambda d, s: log_uniform(-30, 30, d, s)),
    "rsqrt": (lambda v: 1 / mpmath.sqrt(v), lambda d, s: log_uniform(-30, 30, d, s)),
    "cbrt": (lambda v: mpmath.sign(v) * mpmath.cbrt(abs(v)), lambda d, s: log_uniform(-20, 20, d, s, signed=True)),
    "sin": (mpmath.sin, lambda d, s: uniform(-100, 100, d, s)),
    "cos": (mpmath.cos, lambda d, s: uniform(-100, 100, d, s)),
    "tan": (mpmath.tan, lambda d, s: uniform(-1.5, 1.5, d, s)),
    "asin": (mpmath.asin, lambda d, s: uniform(-1, 1, d, s)),
    "acos": (mpmath.acos, lambda d, s: uniform(-1, 1, d, s)),
    "atan": (mpmath.atan, lambda d, s: log_uniform(-5, 5, d, s, signed=True)),
    "sinh": (mpmath.sinh, lambda d, s: uniform(-80, 80, d, s)),
    "cosh": (mpmath.cosh, lambda d, s: uniform(-80, 80, d, s)),
    "asinh": (mpmath.asinh, lambda d, s: log_uniform(-5, 5, d, s, signed=True)),
    "acosh": (mpmath.acosh, lambda d, s: 1 + log_uniform(-3, 5, d, s)),
    "atanh": (mpmath.atanh, lambda d, s: uniform(-0.999, 0.999, d, s)),
    "lgamma": (lambda v: mpmath.log(abs(mpmath.gamma(v))), lambda d, s: np.concatenate([
        uniform(0.05, 30, d, s, N - 8), np.array([-0.5, -1.5, -3.7, -10.25, 0.5, 3.0, 100.0, 1000.0], d)])),
    "tgamma": (mpmath.gamma, lambda d, s: np.concatenate([
        uniform(0.05, 30, d, s, N - 8), np.array([-0.5, -1.5, -3.7, -10.25, 0.5, 3.0, 5.0, 20.5], d)])),
    "fast_expf": (mpmath.exp, lambda d, s: uniform(-80, 80, d, s)),
    "fast_logf": (mpmath.log, lambda d, s: log_uniform(-30, 30, d, s)),
}
FP32_ONLY = {"fast_expf", "fast_logf"}
FP64_ULPS = {"erfc": 4, "lgamma": 4, "tgamma": 4}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_against_mpmath(name, dtype):
    if dtype == np.float64 and name in FP32_ONLY:
        pytest.skip("fp32 only")
    fn, sample = UNARY[name]
    x = sample(dtype, 11)
    expected = mp_ref(fn, [x], dtype)
    got = unary(name, x)
    if name == "lgamma" and dtype == np.float64:  # near its zeros at 1 and 2 libm's error is absolute
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-15)
        return
    maxulp = 1 if dtype == np.float32 else FP64_ULPS.get(name, 2)
    if cuda_accuracy.on_cuda():  # NVIDIA's libdevice, within its documented bounds
        if name == "fast_logf":  # __logf: an absolute error of 2**-21.41 on [0.5, 2], 3 ulp elsewhere
            near_one = (x >= 0.5) & (x <= 2)
            assert (np.abs(got[near_one] - expected[near_one]) <= 2.0 ** -21.41).all()
            got, expected = got[~near_one], expected[~near_one]
        table = cuda_accuracy.LIBDEVICE_FP32_ULPS if dtype == np.float32 else cuda_accuracy.LIBDEVICE_FP64_ULPS
        maxulp = max(maxulp, table.get(name, 2))
    np.testing.assert_array_max_ulp(got, expected, maxulp=maxulp)


# ------------------------------------------------------------------------------------------------
# exact functions: rounding, division, square roots, remainders
# ------------------------------------------------------------------------------------------------
def round_fraction(q: Fraction, dtype, toward_zero=False):
    """The exact rational q rounded to dtype: to nearest (ties to even) or toward zero."""
    first = np.array([float(q)]).astype(dtype)[0]
    candidates = [first, np.nextafter(first, dtype(np.inf)), np.nextafter(first, dtype(-np.inf))]
    if toward_zero:
        below = [c for c in candidates if abs(Fraction(float(c))) <= abs(q) and (c >= 0) == (q >= 0)]
        return max(below, key=lambda c: abs(float(c)))
    bits = {c: int(np.array([c]).view(np.uint64 if dtype == np.float64 else np.uint32)[0]) for c in candidates}
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - q), bits[c] & 1))


def _c_round(v: float) -> float:
    q = Fraction(v)
    return math.copysign(float(math.floor(abs(q) + Fraction(1, 2))), v)


def _signed(fn):
    """An integer-valued rounding as IEEE gives it: a zero result has the argument's sign."""
    return lambda v: float(fn(v)) if fn(v) != 0 else math.copysign(0.0, v)


EXACT_UNARY = {
    "floor": _signed(math.floor), "ceil": _signed(math.ceil), "trunc": _signed(math.trunc), "round": _c_round,
    "rint": _signed(round), "nearbyint": _signed(round), "abs": abs, "saturatef": lambda v: min(max(v, 0.0), 1.0),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(EXACT_UNARY) + ["sqrt_rn", "rcp_rn"])
def test_exactly_rounded_unary_functions(name, dtype):
    if name == "saturatef" and dtype == np.float64:
        pytest.skip("fp32 only")
    g = np.random.default_rng(12)
    x = np.concatenate([g.uniform(-20, 20, N - 16), np.arange(-4, 4, 0.5)]).astype(dtype)  # halfway cases
    got = unary(name, x)
    if name == "sqrt_rn":
        x = np.abs(x)
        got = unary(name, x)
        expected = np.sqrt(x)  # IEEE sqrt is correctly rounded
    elif name == "rcp_rn":
        x = np.where(x == 0, dtype(1), x)
        got = unary(name, x)
        expected = np.array([round_fraction(1 / Fraction(float(v)), dtype) for v in x])
    else:
        expected = np.array([float(EXACT_UNARY[name](float(v))) for v in x], dtype=dtype)
    assert np.array_equal(got, expected.astype(dtype))
    if name in ("round", "rint", "nearbyint", "trunc", "floor", "ceil"):
        assert np.array_equal(np.signbit(got), np.signbit(expected.astype(dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_division_rounded_to_nearest_and_toward_zero(dtype):
    g = np.random.default_rng(13)
    x = (g.standard_normal(N) * 10.0 ** g.integers(-5, 5, N)).astype(dtype)
    y = (g.standard_normal(N) * 10.0 ** g.integers(-5, 5, N)).astype(dtype)
    exact = [Fraction(float(a)) / Fraction(float(b)) for a, b in zip(x, y)]
    assert np.array_equal(binary("div_rn", x, y), np.array([round_fraction(q, dtype) for q in exact]))
    assert np.array_equal(binary("div_rz", x, y), np.array([round_fraction(q, dtype, True) for q in exact]))
    if dtype == np.float32:  # correctly rounded here; the GPU's approximation is within 2 ulp
        rounded = np.array([round_fraction(q, dtype) for q in exact])
        if cuda_accuracy.on_cuda():
            np.testing.assert_array_max_ulp(binary("fast_dividef", x, y), rounded, maxulp=2)
        else:
            assert np.array_equal(binary("fast_dividef", x, y), rounded)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype):
    g = np.random.default_rng(14)
    x, y = (g.standard_normal(N) * 1e3).astype(dtype), (g.standard_normal(N) * 1e3).astype(dtype)
    z = (-(x.astype(np.float64) * y.astype(np.float64)) * (1 + g.standard_normal(N) * 1e-6)).astype(dtype)  # cancels
    out = np.zeros_like(x)
    _fma_kernel[(1,)](x, y, z, out, N=N)
    exact = [Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)) for a, b, c in zip(x, y, z)]
    assert np.array_equal(out, np.array([round_fraction(q, dtype) for q in exact]))


EXACT_BINARY = {
    "fmod": math.fmod, "remainder": math.remainder, "copysign": math.copysign, "fmin": min, "fmax": max,
    "fdim": lambda a, b: a - b if a > b else 0.0,
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(EXACT_BINARY) + ["hypot", "atan2", "pow", "nextafter"])
def test_binary_functions(name, dtype):
    g = np.random.default_rng(15)
    x = (g.standard_normal(N) * 10).astype(dtype)
    y = (g.standard_normal(N) * 3).astype(dtype)
    if name == "pow":
        x = np.abs(x)
    got = binary(name, x, y)
    if name in EXACT_BINARY:  # fp32 -> fp64 -> fp32 is exact for these (fdim: one rounding of x - y)
        expected = np.array([EXACT_BINARY[name](float(a), float(b)) for a, b in zip(x, y)]).astype(dtype)
        assert np.array_equal(got, expected)
    elif name == "nextafter":
        assert np.array_equal(got, np.nextafter(x, y))
    else:
        fn = {"hypot": mpmath.hypot, "atan2": mpmath.atan2, "pow": mpmath.power}[name]
        np.testing.assert_array_max_ulp(got, mp_ref(fn, [x, y], dtype), maxulp=1 if dtype == np.float32 else 2)


@triton.jit
def _int_arg_kernel(x_ptr, n_ptr, p_ptr, l_ptr, s_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    n = tl.load(n_ptr + r)
    tl.store(p_ptr + r, libdevice.pow(x, n))  # an int32 exponent selects powi
    tl.store(l_ptr + r, libdevice.ldexp(x, n))
    tl.store(s_ptr + r, libdevice.scalbn(x, n) + libdevice.pow(x, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integer_exponents(dtype):
    g = np.random.default_rng(16)
    x = g.uniform(0.5, 2.0, N).astype(dtype) * g.choice([-1, 1], N).astype(dtype)
    n = g.integers(-60, 60, N).astype(np.int32)
    outs = [np.zeros_like(x) for _ in range(3)]
    _int_arg_kernel[(1,)](x, n, *outs, N=N)
    np.testing.assert_array_max_ulp(outs[0], mp_ref(lambda a, b: mpmath.power(a, b), [x, n], dtype),
                                    maxulp=cuda_accuracy.POWI_ULPS if cuda_accuracy.on_cuda() else 1)
    expected_ldexp = np.array([math.ldexp(float(a), int(b)) for a, b in zip(x, n)]).astype(dtype)
    assert np.array_equal(outs[1], expected_ldexp)
    assert np.array_equal(outs[2], (expected_ldexp + (x.astype(np.float64) ** 2).astype(dtype)).astype(dtype))


# ------------------------------------------------------------------------------------------------
# classification and integer results
# ------------------------------------------------------------------------------------------------
@triton.jit
def _classify_kernel(x_ptr, nan_ptr, inf_ptr, fin_ptr, sign_ptr, ilogb_ptr, logb_ptr, N: tl.constexpr,
                     FP64: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    is_nan = libdevice.isnan(x)
    tl.static_assert(is_nan.dtype == tl.int1)
    tl.store(nan_ptr + r, is_nan)
    tl.store(inf_ptr + r, libdevice.isinf(x))
    if FP64:
        tl.store(fin_ptr + r, libdevice.isfinited(x))
    else:
        tl.store(fin_ptr + r, libdevice.finitef(x))
    sign = libdevice.signbit(x)
    tl.static_assert(sign.dtype == tl.int32)
    tl.store(sign_ptr + r, sign)
    tl.store(ilogb_ptr + r, libdevice.ilogb(x))
    tl.store(logb_ptr + r, libdevice.logb(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_classification_ilogb_logb(dtype):
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.75, 3.0, -1e30, 1e-30, 2.0**100, 6e7]
    x = np.array(values + [1.5] * (16 - len(values)), dtype=dtype)
    outs = [np.zeros(16, bool), np.zeros(16, bool), np.zeros(16, bool), np.zeros(16, np.int32),
            np.zeros(16, np.int32), np.zeros(16, dtype)]
    _classify_kernel[(1,)](x, *outs, N=16, FP64=dtype == np.float64)
    is_nan, is_inf, finite, sign, ilogb, logb = outs
    assert np.array_equal(is_nan, np.isnan(x)) and np.array_equal(is_inf, np.isinf(x))
    assert np.array_equal(finite, np.isfinite(x)) and np.array_equal(sign, np.signbit(x).astype(np.int32))
    normal = np.isfinite(x) & (x != 0)
    exponents = np.array([math.frexp(float(v))[1] - 1 for v in x[normal]])
    assert np.array_equal(ilogb[normal], exponents) and np.array_equal(logb[normal], exponents.astype(dtype))
    # CUDA's documented values: ilogb(0) = ilogb(NaN) = INT_MIN, ilogb(+-inf) = INT_MAX
    assert ilogb[:5].tolist() == [-2**31, -2**31, 2**31 - 1, 2**31 - 1, -2**31]
    assert logb[:4].tolist() == [-np.inf, -np.inf, np.inf, np.inf] and np.isnan(logb[4])


@triton.jit
def _bits_kernel(x_ptr, p_ptr, c_ptr, a_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(p_ptr + r, libdevice.popc(x))
    tl.store(c_ptr + r, libdevice.clz(x))
    tl.store(a_ptr + r, libdevice.abs(x))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_popc_clz_integer_abs(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(17).integers(info.min, info.max, 64, dtype=dtype)
    x[:4] = [0, -1, info.min, 1]
    popc, clz = np.zeros(64, np.int32), np.zeros(64, np.int32)
    absolute = np.zeros_like(x)
    _bits_kernel[(1,)](x, popc, clz, absolute, N=64)
    unsigned = [int(v) % 2**info.bits for v in x]
    assert popc.tolist() == [u.bit_count() for u in unsigned]
    assert clz.tolist() == [info.bits - u.bit_length() for u in unsigned]
    assert absolute.tolist() == [abs(int(v)) if v != info.min else int(info.min) for v in x]  # abs(MIN) wraps


@triton.jit
def _llrint_kernel(x_ptr, a_ptr, b_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(a_ptr + r, libdevice.llrint(x))
    tl.store(b_ptr + r, libdevice.llround(x))


def test_llrint_llround():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -3.7, 1e10, -1e10, 0.0, 7.0, -7.49999], dtype=np.float64)
    x = np.concatenate([x, np.zeros(4)])
    a, b = np.zeros(16, np.int64), np.zeros(16, np.int64)
    _llrint_kernel[(1,)](x, a, b, N=16)
    assert a.tolist() == [round(v) for v in x.tolist()]  # Python rounds halfway cases to even, as rint does
    assert b.tolist() == [int(_c_round(v)) for v in x.tolist()]


# ------------------------------------------------------------------------------------------------
# special values (C99 Annex F, CUDA math API)
# ------------------------------------------------------------------------------------------------
INF, NAN = math.inf, math.nan
SPECIAL_UNARY = [
    ("tgamma", 0.0, INF), ("tgamma", -0.0, -INF), ("tgamma", -1.0, NAN), ("tgamma", -INF, NAN), ("tgamma", INF, INF),
    ("tgamma", 200.0, INF), ("lgamma", 0.0, INF), ("lgamma", -2.0, INF), ("lgamma", 1.0, 0.0), ("lgamma", -INF, INF),
    ("erf", INF, 1.0), ("erf", -INF, -1.0), ("erfc", -INF, 2.0), ("erfc", INF, 0.0), ("tanh", -INF, -1.0),
    ("log", 0.0, -INF), ("log", -1.0, NAN), ("log1p", -1.0, -INF), ("sqrt", -1.0, NAN), ("rsqrt", 0.0, INF),
    ("rsqrt", -0.0, -INF), ("exp", -INF, 0.0), ("expm1", -INF, -1.0), ("cbrt", -27.0, -3.0), ("atanh", 1.0, INF),
    ("acosh", 0.5, NAN), ("round", 0.5, 1.0), ("round", -2.5, -3.0), ("round", 0.49999997, 0.0),
    ("rint", 2.5, 2.0), ("nearbyint", -0.5, -0.0), ("saturatef", NAN, 0.0), ("saturatef", 7.0, 1.0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(dtype):
    for name, arg, expected in SPECIAL_UNARY:
        if name == "saturatef" and dtype == np.float64:
            continue
        got = unary(name, np.array([arg] * 2, dtype=dtype))[0]
        if math.isnan(expected):
            assert math.isnan(got), (name, arg, got)
        else:
            assert got == expected and math.copysign(1, got) == math.copysign(1, expected), (name, arg, got)
    pairs = [("remainder", 5.0, 2.0, 1.0), ("remainder", 7.0, 2.0, -1.0), ("remainder", 1.0, 0.0, NAN),
             ("fmod", -7.0, 2.0, -1.0), ("fmod", INF, 2.0, NAN), ("atan2", 0.0, -1.0, math.pi),
             ("pow", 0.0, -1.0, INF), ("pow", -8.0, 1 / 3, NAN), ("pow", -2.0, 3.0, -8.0), ("pow", 1.0, NAN, 1.0),
             ("hypot", INF, NAN, INF), ("copysign", 1.0, -0.0, -1.0), ("fmin", NAN, 1.0, 1.0),
             ("fmax", -1.0, NAN, -1.0), ("fdim", 1.0, 3.0, 0.0), ("fdim", NAN, 1.0, NAN),
             ("div_rn", 1.0, 0.0, INF), ("div_rz", -1.0, 0.0, -INF), ("div_rz", 1e300, 1e-300, 1.7976931348623157e308)]
    for name, a, b, expected in pairs:
        if name == "div_rz" and a == 1e300 and dtype == np.float32:
            a, b, expected = 1e30, 1e-30, float(np.finfo(np.float32).max)  # overflow toward zero: the largest finite
        got = binary(name, np.array([a] * 2, dtype=dtype), np.array([b] * 2, dtype=dtype))[0]
        if math.isnan(expected):
            assert math.isnan(got), (name, a, b, got)
        else:
            assert got == np.array(expected, dtype=dtype) and math.copysign(1, got) == math.copysign(1, expected), \
                (name, a, b, got)


# ------------------------------------------------------------------------------------------------
# subnormals: fp32 as on the H200 (libdevice in flush-to-zero mode), fp64 kept
# ------------------------------------------------------------------------------------------------
SUB = 9.99994610111476e-41  # np.float32(1e-40), a subnormal
SMALLEST_NORMAL = 1.1754943508222875e-38
GPU_FP32_UNARY = [  # (function, argument, what Triton 3.6 gave on an H200)
    ("erf", SUB, 0.0), ("sin", SUB, 0.0), ("tanh", -SUB, -0.0), ("abs", -SUB, 0.0), ("ceil", SUB, 0.0),
    ("sqrt", SUB, 0.0), ("rsqrt", SUB, INF), ("ilogb", SUB, None), ("lgamma", SUB, INF),
    ("exp", -100.0, 3.783505853677006e-44), ("log", SUB, -92.10340881347656), ("log2", SUB, -132.87713623046875),
    ("cbrt", SUB, NAN), ("logb", SUB, -150.0), ("tgamma", -4.999999675228202e-39, -2.0000001388812345e+38),
    ("tgamma", 4.999999675228202e-39, INF), ("erfc", 9.227659225463867, 6.364687815874069e-39),
    ("erfc", 9.482978820800781, 0.0), ("exp2", -130.0, 0.0), ("rcp_rn", 1e38, 0.0),
]
GPU_FP32_BINARY = [
    ("div_rn", SUB, SUB, NAN), ("fmod", SUB, SUB, NAN), ("atan2", SUB, SUB, 0.0), ("copysign", SUB, -2.0, -SUB),
    ("nextafter", 0.0, 1.0, SMALLEST_NORMAL), ("nextafter", SUB, 1.0, SMALLEST_NORMAL),
    ("nextafter", SMALLEST_NORMAL, 0.0, 1.1754942106924411e-38), ("fdim", 2 * SUB, SUB, SUB),
    ("hypot", SUB, SUB, 0.0), ("pow", 0.0, SUB, 0.0),
]


# measured with the CUDA 13 toolkit's libdevice, tritium's CUDA backend gave -inf here where Triton
# (its own libdevice) gives -2e38; the interpreter gives Triton's (docs/cuda-backend.md)
CUDA_DIFFERS = {("tgamma", -4.999999675228202e-39)}


def test_fp32_subnormals_behave_as_on_a_gpu():
    for name, arg, expected in GPU_FP32_UNARY:
        if cuda_accuracy.on_cuda() and (name, arg) in CUDA_DIFFERS:
            continue
        if name == "ilogb":
            assert unary(name, np.full(2, arg, np.float32), np.int32)[0] == -2**31
            continue
        got = unary(name, np.full(2, arg, np.float32))[0]
        assert (math.isnan(got) and math.isnan(expected)) or (got == np.float32(expected) and
                                                              math.copysign(1, got) == math.copysign(1, expected)), \
            (name, arg, got, expected)
    for name, a, b, expected in GPU_FP32_BINARY:
        got = binary(name, np.full(2, a, np.float32), np.full(2, b, np.float32))[0]
        assert (math.isnan(got) and math.isnan(expected)) or got == np.float32(expected), (name, a, b, got, expected)
    x = np.array([SUB, -3.000000645916e-39] * 2, dtype=np.float32)
    out = np.zeros(4, np.float32)
    _int_arg_kernel[(1,)](x, np.array([-150, 7, 20, -3], np.int32), np.zeros(4, np.float32), out,
                          np.zeros(4, np.float32), N=4)
    assert np.array_equal(out, x + x)  # ldexp of a subnormal: doubled, whatever the exponent (as measured)
    z = np.full(4, np.float32(2.0**-128))  # fma reads the subnormal addend as zero
    fma_out = np.zeros(4, np.float32)
    _fma_kernel[(1,)](np.full(4, np.float32(SMALLEST_NORMAL)), np.full(4, np.float32(2.0)), z, fma_out, N=4)
    assert fma_out[0] == np.float32(2 * SMALLEST_NORMAL)


def test_fp64_subnormals_are_kept():
    x = np.full(4, 1e-310)
    assert unary("erf", x)[0] == pytest.approx(2 / math.sqrt(math.pi) * 1e-310, rel=1e-12)
    assert unary("sqrt", x)[0] == math.sqrt(1e-310)
    assert binary("div_rn", x, np.full(4, 2.0))[0] == 5e-311


# ------------------------------------------------------------------------------------------------
# argument types, as Triton dispatches them
# ------------------------------------------------------------------------------------------------
@triton.jit
def _typed_kernel(x_ptr, o_ptr, N: tl.constexpr, CASE: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if CASE == "tanh":
        y = libdevice.tanh(x)
    elif CASE == "pow_float":
        y = libdevice.pow(x, 2.0)
    elif CASE == "isfinited":
        y = libdevice.isfinited(x)
    elif CASE == "fmod_mixed":
        y = libdevice.fmod(x, x.to(tl.float32))
    else:
        y = libdevice.atan2(x, 1)
    tl.store(o_ptr + r, y)


def test_fp16_and_integer_arguments_are_compile_errors_naming_the_accepted_types():
    accepted = r"libdevice.tanh does not accept \(fp16\): it takes \(fp32\) or \(fp64\)"
    with pytest.raises(CompilationError, match=accepted):
        _typed_kernel[(1,)](np.zeros(4, np.float16), np.zeros(4, np.float16), N=4, CASE="tanh")
    with pytest.raises(CompilationError, match=r"libdevice.tanh does not accept \(int32\)"):
        _typed_kernel[(1,)](np.zeros(4, np.int32), np.zeros(4, np.int32), N=4, CASE="tanh")
    with pytest.raises(CompilationError, match=r"libdevice.pow does not accept \(fp16, fp16\)"):  # as in Triton 3.6
        _typed_kernel[(1,)](np.zeros(4, np.float16), np.zeros(4, np.float16), N=4, CASE="pow_float")
    with pytest.raises(CompilationError, match=r"isfinited does not accept \(fp32\): it takes \(fp64\)"):
        _typed_kernel[(1,)](np.zeros(4, np.float32), np.zeros(4, np.float32), N=4, CASE="isfinited")


def test_mixed_arguments_are_promoted():
    x = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float64)
    out = np.zeros(4)
    _typed_kernel[(1,)](x, out, N=4, CASE="fmod_mixed")  # (fp64, fp32) -> fp64
    assert np.array_equal(out, np.zeros(4))
    _typed_kernel[(1,)](x, out, N=4, CASE="pow_float")  # (fp64, 2.0) -> fp64
    assert np.array_equal(out, x * x)
    x32 = x.astype(np.float32)
    out32 = np.zeros(4, np.float32)
    _typed_kernel[(1,)](x32, out32, N=4, CASE="atan2")  # (fp32, 1) -> fp32
    np.testing.assert_array_max_ulp(out32, np.arctan2(x, 1.0).astype(np.float32), maxulp=1)


def test_libdevice_module_paths():
    assert tl.extra.libdevice is libdevice
    assert importlib.import_module("tritium.language.extra.cuda.libdevice").tanh is libdevice.tanh
    from tritium import compat

    compat.install()
    try:
        triton_libdevice = importlib.import_module("triton.language.extra.libdevice")
        assert triton_libdevice.erf is libdevice.erf
        from triton.language.extra.cuda import libdevice as cuda_libdevice  # noqa: F401 (older spelling)

        assert cuda_libdevice.pow is libdevice.pow
    finally:
        sys.meta_path.remove(compat._FINDER)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]


def test_a_libdevice_call_is_one_ir_operation():
    text = _unary_kernel.ir("*fp32,*fp32", N=16, FN="tanh")
    assert "libdevice" in text and "fn='tanh'" in text and "symbol='__nv_tanhf'" in text
