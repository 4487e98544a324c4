"""libdevice on numpy arrays: one evaluation per function of ``tl.extra.libdevice``.

This is the definition the CPU backend's lowering follows (``backends/llvm/libdevice.py``); the
interpreter runs that lowering itself where llvmlite is available (for the same bits,
``backends/interpreter/math_functions.py``) and this module where it is not, or for the functions
the lowering lacks.

fp32 arguments are widened to fp64, the function is evaluated there and the result rounded to
fp32 once; for +, -, *, /, sqrt and for exact operations (floor, fmod, copysign, ldexp...) that
is the correctly rounded fp32 result, and for the transcendental functions it is within an ulp
of it, as good as or better than libdevice's own bounds (tanhf 2 ulp, powf 4 ulp, ...).
fp64 arguments are evaluated with numpy's / Python's fp64 functions.
``fast_expf``, ``fast_logf`` and ``fast_dividef`` are approximations on a GPU (``ex2.approx``,
``lg2.approx``, ``div.approx``); here they are computed like ``expf``, ``logf`` and ``/``.

Measured against Triton 3.6 on an H200 over 2048 arguments per function: normal fp32 results
agree to within libdevice's error (at most 3 ulp; fast_expf/fast_logf up to a few hundred ulp;
lgamma near its zeros, where libdevice's error is absolute), and subnormal arguments and results
follow the GPU's flush-to-zero behaviour exactly (see ``evaluate``).
"""
from __future__ import annotations

import math

import numpy as np

from ..compiler.ir import types as T
from . import arithmetic

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _elementwise(scalar_fn):
    """A Python float -> float function applied to every element of an fp64 array."""
    ufunc = np.frompyfunc(scalar_fn, 1, 1)

    def apply(x):
        return ufunc(x).astype(np.float64) if x.size else x.astype(np.float64)

    return apply


def _binary_elementwise(scalar_fn):
    ufunc = np.frompyfunc(scalar_fn, 2, 1)

    def apply(x, y):
        x, y = np.broadcast_arrays(x, y)
        return ufunc(x, y).astype(np.float64) if x.size else x.astype(np.float64)

    return apply


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # poles at 0, -1, -2, ...
        return math.inf


def _tgamma(x: float) -> float:
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf
    except ValueError:  # 0 -> +-inf (the sign of the zero); negative integers and -inf -> NaN
        return math.copysign(math.inf, x) if x == 0 else math.nan


def _remainder(x: float, y: float) -> float:
    try:
        return math.remainder(x, y)
    except ValueError:  # y == 0 or x infinite
        return math.nan


def _round_half_away(x):
    """C's round(): to the nearest integer, halfway cases away from zero."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _ilogb(x):
    """The unbiased exponent as an int32; CUDA gives INT_MIN for 0 and NaN, INT_MAX for +-inf."""
    _, exponent = np.frexp(x)
    out = exponent.astype(np.int64) - 1
    out = np.where((x == 0) | np.isnan(x), _INT32_MIN, out)
    return np.where(np.isinf(x), _INT32_MAX, out).astype(np.int32)


def _logb(x):
    _, exponent = np.frexp(x)
    out = (exponent - 1).astype(np.float64)
    out = np.where(x == 0, -np.inf, out)
    return np.where(np.isinf(x), np.inf, np.where(np.isnan(x), np.nan, out))


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _saturate(x):
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


def _ldexp(x, n):
    return np.ldexp(x, np.clip(n.astype(np.int64), -4096, 4096).astype(np.int32))


def _cbrt(x):
    """Cube root within half an ulp: libm's (and numpy's scalar loop) can be one ulp off on exact
    cubes (cbrt(-27.0) = -3.0000000000000004); one Newton step in extended precision mends it."""
    y = np.cbrt(x)
    wide = y.astype(np.longdouble)
    with np.errstate(all="ignore"):
        polished = (wide - (wide * wide * wide - x) / (3 * wide * wide)).astype(np.float64)
    return np.where(np.isfinite(y) & (y != 0), polished, y)


def _erfinv(x):
    """The inverse error function in fp64: Winitzki's closed form as a first guess (within about
    2e-3 relative), then three Newton steps y -= f(y) sqrt(pi)/2 e^(y^2) on f = erf(y) - |x| for
    |x| <= 1/2 and f = (1 - |x|) - erfc(y) above (1 - |x| is exact there, so the steps keep their
    accuracy as |x| nears 1). erfinv(+-1) = +-inf, NaN outside [-1, 1], signed zeros kept."""
    erf, erfc = _elementwise(math.erf), _elementwise(math.erfc)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        inside = a < 1
        b = np.where(inside, a, 0.5)
        ln = np.log1p(-b * b)
        c = 2 / (np.pi * 0.147) + ln / 2
        y = np.sqrt(np.sqrt(c * c - ln / 0.147) - c)
        small = b <= 0.5
        for _ in range(3):
            f = np.where(small, erf(y) - b, (1 - b) - erfc(y))
            y = y - f * (np.sqrt(np.pi) / 2) * np.exp(y * y)
        y = np.copysign(y, x)
        y = np.where(a == 1, np.copysign(np.inf, x), y)
        y = np.where((a > 1) | np.isnan(x), np.nan, y)
        return np.where(a == 0, x, y)


def _pow(x, y):
    return np.power(x, y.astype(np.float64))


# fp64 evaluations; an fp32 call widens its float arguments, evaluates, then rounds once.
_WIDE = {
    "abs": np.abs, "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "rcp_rn": lambda x: 1.0 / x, "div_rn": np.divide, "fast_dividef": np.divide,
    "exp": np.exp, "fast_expf": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1, "log": np.log, "fast_logf": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "pow": _pow,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "hypot": np.hypot, "cbrt": _cbrt,
    "erf": _elementwise(math.erf), "erfc": _elementwise(math.erfc), "erfinv": _erfinv,
    "lgamma": _elementwise(_lgamma), "tgamma": _elementwise(_tgamma),
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": _round_half_away, "rint": np.rint,
    "nearbyint": np.rint, "fmod": np.fmod, "remainder": _binary_elementwise(_remainder),
    "fmin": np.fmin, "fmax": np.fmax, "copysign": np.copysign, "fdim": _fdim, "saturatef": _saturate,
    "ldexp": _ldexp, "scalbn": _ldexp, "logb": _logb,
}

# Functions with integer results (or integer arguments), evaluated as written.
_EXACT = {
    "isnan": lambda x: np.isnan(x).astype(np.int32),
    "isinf": lambda x: np.isinf(x).astype(np.int32),
    "isfinited": lambda x: np.isfinite(x).astype(np.int32),
    "finitef": lambda x: np.isfinite(x).astype(np.int32),
    "signbit": lambda x: np.signbit(x).astype(np.int32),
    "ilogb": lambda x: _ilogb(x.astype(np.float64)),
    "popc": lambda x: np.bitwise_count(x.astype(f"uint{x.dtype.itemsize * 8}")).astype(np.int32),
    "clz": lambda x: _clz(x),
}


def _clz(x):
    bits = x.dtype.itemsize * 8
    u = x.astype(np.uint64) & np.uint64((1 << bits) - 1)
    count = np.full(u.shape, bits, dtype=np.int32)
    for shift in range(bits):
        count = np.where((u >> np.uint64(shift)) != 0, bits - 1 - shift, count)
    return count.astype(np.int32)


def _to_int64_saturating(x):
    return arithmetic.cast(x, T.float64, T.int64)


def _div_rz(a, b):
    """a / b rounded toward zero."""
    if a.dtype != np.float64:
        wide = a.astype(np.float64) / b.astype(np.float64)
        return arithmetic._round_toward_zero(wide, wide.astype(a.dtype))
    q = a / b
    residual = arithmetic.fma(-q, b, a)  # a - q*b, exactly
    inexact = (residual != 0) & np.isfinite(q)
    too_big = inexact & ((np.signbit(residual) ^ np.signbit(b)) != np.signbit(q))
    q = np.where(too_big, np.nextafter(q, np.copysign(0.0, q)), q)
    overflow = np.isinf(q) & np.isfinite(a) & np.isfinite(b) & (b != 0)
    return np.where(overflow, np.copysign(np.finfo(np.float64).max, q), q)


_SMALLEST_NORMAL_32 = np.float32(2.0**-126)


def flush_subnormals(x: np.ndarray) -> np.ndarray:
    """fp32 subnormals replaced by zeros of the same sign; other dtypes unchanged."""
    if x.dtype != np.float32:
        return x
    return np.where(np.abs(x) < _SMALLEST_NORMAL_32, np.copysign(np.float32(0.0), x), x).astype(np.float32)


def _nextafter_ftz(x, y):
    """nextafter with subnormal arguments read as zeros: from +-0 the next value is the smallest
    normal; stepping down from the smallest normal still gives the largest subnormal."""
    step = np.nextafter(x, y)
    subnormal = (step != 0) & (np.abs(step) < _SMALLEST_NORMAL_32)
    away = subnormal & (np.abs(step) > np.abs(x))
    return np.where(away, np.copysign(_SMALLEST_NORMAL_32, step), step).astype(np.float32)


# Triton links libdevice in flush-to-zero mode. On a GPU most of its fp32 functions then read
# subnormal arguments as zeros and return zeros instead of subnormal results; these do not
# (measured on an H200 with Triton 3.6, 2048 arguments per function).
_KEEPS_SUBNORMAL_ARGUMENTS = {"log", "log2", "log10", "copysign", "fdim", "pow", "ldexp", "scalbn", "tgamma"}
_KEEPS_SUBNORMAL_RESULTS = {"exp", "exp10", "copysign", "fdim", "tgamma", "ldexp", "scalbn", "erfc", "nextafter"}
_LN_SMALLEST_NORMAL_32 = 87.33654475055310898657  # -log(2**-126)


def evaluate(name: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """The libdevice function ``name`` applied elementwise; the result has dtype ``out``.

    fp32 follows the GPU's flush-to-zero behaviour (``erf(1e-40)`` is 0, ``div_rn(1e-40, 1e-40)``
    is NaN), including the measured special cases in ``_flush_to_zero_quirks``.
    """
    if not any(a.dtype == np.float32 for a in args):
        return _evaluate(name, args, out)
    given = args
    if name not in _KEEPS_SUBNORMAL_ARGUMENTS:
        args = [flush_subnormals(a) for a in args]
    result = _nextafter_ftz(*args) if name == "nextafter" else _evaluate(name, args, out)
    if result.dtype == np.float32 and name not in _KEEPS_SUBNORMAL_RESULTS:
        result = flush_subnormals(result)
    return _flush_to_zero_quirks(name, given[0], result)


def _flush_to_zero_quirks(name: str, x: np.ndarray, result: np.ndarray) -> np.ndarray:
    """What libdevice's flush-to-zero code paths give for some fp32 arguments (measured)."""
    if x.dtype != np.float32:
        return result
    subnormal = (x != 0) & (np.abs(x) < _SMALLEST_NORMAL_32)
    if name == "cbrt":
        return np.where(subnormal, np.float32(np.nan), result)
    if name == "logb":
        return np.where(subnormal, np.float32(-150.0), result)
    if name in ("ldexp", "scalbn"):  # a subnormal x comes back doubled, whatever the exponent
        return np.where(subnormal, x + x, result)
    if name == "tgamma":
        return np.where(subnormal & (x > 0), np.float32(np.inf), result)
    if name == "erfc":  # zero once the exp(-x*x) inside underflows
        wide = x.astype(np.float64)
        return np.where((wide > 0) & (wide * wide > _LN_SMALLEST_NORMAL_32), np.float32(0.0), result)
    return result


def _evaluate(name: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    if name in _EXACT:
        return _EXACT[name](args[0])
    if name == "nextafter":
        return np.nextafter(args[0], args[1])
    if name in ("fma", "fma_rn"):
        return arithmetic.fma(*args)
    if name == "div_rz":
        return _div_rz(args[0], args[1])
    if name in ("llrint", "llround"):
        rounded = (np.rint if name == "llrint" else _round_half_away)(args[0].astype(np.float64))
        return _to_int64_saturating(rounded)
    fn = _WIDE[name]
    if np.issubdtype(out, np.integer):  # abs of an integer
        return fn(args[0]).astype(out)
    wide = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in args]
    return np.asarray(fn(*wide)).astype(out)
