"""Exponentials and logarithms: fp32 exp, exp2, exp10, log, log2, log10, log1p, expm1, sigmoid and
tanh (range reduction and minimax polynomials), and the fp64 functions of the C library.
"""
from __future__ import annotations

import llvmlite.ir as ir

from .core import F64, INF, NAN, _Ops, _fix, _horner, _ldexp, _pow2i, _register, _split

# ------------------------------------------------------------------------------------------------
# fp64: the C library
# ------------------------------------------------------------------------------------------------
def _libm(o: _Ops, cname: str, *args):
    """A call to the C library's ``double cname(double, ...)``, declared in the module once."""
    module = o.b.module
    fn = module.globals.get(cname)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(F64, [F64] * len(args)), cname)
    return o.b.call(fn, list(args))


def _libm_function(cname: str):
    return lambda o, *args: _libm(o, cname, *args)


# name -> (C99 name, arity)
_LIBM = {
    "exp": ("exp", 1), "exp2": ("exp2", 1), "expm1": ("expm1", 1), "log": ("log", 1),
    "log2": ("log2", 1), "log10": ("log10", 1), "log1p": ("log1p", 1),
    "sin": ("sin", 1), "cos": ("cos", 1), "tan": ("tan", 1),
    "asin": ("asin", 1), "acos": ("acos", 1), "atan": ("atan", 1), "atan2": ("atan2", 2),
    "sinh": ("sinh", 1), "cosh": ("cosh", 1), "tanh": ("tanh", 1),
    "asinh": ("asinh", 1), "acosh": ("acosh", 1), "atanh": ("atanh", 1),
    "erf": ("erf", 1), "erfc": ("erfc", 1), "pow": ("pow", 2), "cbrt": ("cbrt", 1),
    "fmod": ("fmod", 2), "hypot": ("hypot", 2),
}
for _name, (_cname, _arity) in _LIBM.items():
    _register(_name, 64, _arity)(_libm_function(_cname))


@_register("exp10", 64)
def _exp10_f64(o, x):
    # C99 has no exp10 (glibc's is an extension); pow(10, x) is as accurate.
    return _libm(o, "pow", o.c(10.0), x)


# ------------------------------------------------------------------------------------------------
# fp32 exponentials: b^x = 2^k * b^r
# ------------------------------------------------------------------------------------------------
# e^r = 1 + r + r^2 Q(r) on |r| <= ln2/2 (+0.05%); relative error of e^r below 2^-28.2.
_EXP_Q = [0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.00836874544620514,
          0.0013814539415761828]
# 2^r = 1 + r Q(r) on |r| <= 1/2 (+0.05%); relative error below 2^-28.9.
_EXP2_Q = [0.6931471824645996, 0.24022647738456726, 0.05550331994891167, 0.00961843878030777,
           0.0013399003073573112, 0.00015353257185779512]
# 10^r = 1 + r Q(r) on |r| <= log10(2)/2 (+0.05%); relative error below 2^-28.9.
_EXP10_Q = [2.3025851249694824, 2.6509487628936768, 2.0346498489379883, 1.171292781829834,
            0.5420277714729309, 0.20632097125053406]

_LN2_HI, _LN2_LO = _split(0.6931471805599453094172321)  # hi = fp32(ln 2): k*hi is exact in fma
_LOG2E = 1.4426950408889634074
_LG2_HI, _LG2_LO = _split(0.3010299956639811952137389)  # log10(2)
_LOG2_10 = 3.3219280948873623479


def _exp_of_reduced(o: _Ops, r):
    """e^r for |r| <= ln2/2 (+0.05%) as 1 + (r + r^2 Q(r)): the small part first, one rounding
    when 1 is added."""
    return o.add(o.fma(o.mul(r, r), _horner(o, r, _EXP_Q), r), 1.0)


def _exp_f32_core(o: _Ops, x, mode: str = "e"):
    """b^x for fp32 x clamped to the range where the result is not trivially 0 or inf.

    ``mode``: "e", "2" or "10". k = rint(x log2 b), r = x - k log_b 2 (two-constant Cody-Waite:
    the first fma is exact, hi being fp32(log_b 2) and |r| < 1/2), b^r from the polynomial, then
    scaled by 2^k in two steps (``_ldexp``) so that subnormal results are rounded once.
    """
    if mode == "2":
        k = o.rint(x)
        r = o.sub(x, k)  # exact
        p = o.fma(r, _horner(o, r, _EXP2_Q), 1.0)
    elif mode == "10":
        k = o.rint(o.mul(x, _LOG2_10))
        r = o.fma(k, -_LG2_HI, x)
        r = o.fma(k, -_LG2_LO, r)
        p = o.fma(r, _horner(o, r, _EXP10_Q), 1.0)
    else:
        k = o.rint(o.mul(x, _LOG2E))
        r = o.fma(k, -_LN2_HI, x)
        r = o.fma(k, -_LN2_LO, r)
        p = _exp_of_reduced(o, r)
    return _ldexp(o, p, o.to_int(k))


# the clamp range of each exponential: beyond it the result is 0 or inf after rounding anyway
_EXP_RANGE = {"e": (-104.0, 89.0), "2": (-151.0, 129.0), "10": (-46.0, 39.0)}


def _exp_f32(o: _Ops, x, mode: str):
    """b^x. Below the range (-inf included: a masked lane's usual ``other``) the result is 0,
    selected: computed, it would be an underflow, which x86 finishes in a microcode assist (about
    20 cycles per element instead of 1.4); the core gets 0 there instead."""
    lo, hi = _EXP_RANGE[mode]
    under = o.lt(x, lo)
    y = _exp_f32_core(o, o.min(o.sel(under, 0.0, x), hi), mode)
    return _fix(o, y, (o.isnan(x), x), (under, 0.0))


@_register("exp", 32)
def exp_f32(o, x):
    """e^x: inf above 88.72283, subnormal results below -87.34, 0 below -103.97."""
    return _exp_f32(o, x, "e")


@_register("exp2", 32)
def exp2_f32(o, x):
    """2^x."""
    return _exp_f32(o, x, "2")


@_register("exp10", 32)
def exp10_f32(o, x):
    """10^x."""
    return _exp_f32(o, x, "10")


# ------------------------------------------------------------------------------------------------
# fp32 logarithms: log_b x = k log_b 2 + log_b(1 + f)
# ------------------------------------------------------------------------------------------------
# log_b(1 + f) = f log_b(e) + f^2 C(f) on [sqrt(1/2) - 1, sqrt(2) - 1], one fit per base;
# relative error of log_b(1 + f) below 2^-27.8.
_LOG_C = {
    "e": [-0.49999988079071045, 0.33333325386047363, -0.25001582503318787, 0.2000197470188141,
          -0.16609081625938416, 0.14181822538375854, -0.13242991268634796, 0.1290445476770401,
          -0.07621794193983078],
    "2": [-0.7213473320007324, 0.4808982312679291, -0.36069658398628235, 0.2885674834251404,
          -0.23961840569972992, 0.20460045337677002, -0.19105598330497742, 0.18617191910743713,
          -0.10995924472808838],
    "10": [-0.21714718639850616, 0.14476479589939117, -0.10858049243688583, 0.08686746656894684,
           -0.07213232666254044, 0.06159087270498276, -0.05751357972621918, 0.05604333057999611,
           -0.03310103341937065],
}
# the multipliers of k (log_b 2) and of f (log_b e) as hi + lo; None: exactly 1
_LOG_K = {"e": _split(0.6931471805599453094172321), "2": None, "10": _split(0.3010299956639811952137389)}
_LOG_F = {"e": None, "2": _split(1.4426950408889634073599247), "10": _split(0.4342944819032518276511289)}
_SQRT_HALF_BITS = 0x3F3504F3  # fp32(sqrt(1/2))


def _log_reduce_f32(o: _Ops, x):
    """(k, f) with x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for positive finite x.

    Subnormal x is first scaled by 2^23 so its mantissa is read exactly. Subtracting the bits of
    sqrt(1/2) before splitting exponent and mantissa centres the mantissa range on 1.
    """
    tiny = o.lt(x, 2.0 ** -126)
    xs = o.sel(tiny, o.mul(x, 2.0 ** 23), x)
    ix = o.isub(o.as_int(xs), _SQRT_HALF_BITS)
    k = o.iadd(o.ashr(ix, 23), o.isel(tiny, -23, 0))
    m = o.as_float(o.iadd(o.iand(ix, 0x7FFFFF), _SQRT_HALF_BITS))
    return o.to_float(k), o.sub(m, 1.0)  # m - 1 is exact


def _log_combine_f32(o: _Ops, k, f, base: str, correction=None):
    """k log_b 2 + log_b(1 + f) (+ ``correction``, a tiny term added before the last rounding).

    The two large terms, K = k log_b 2 and F = f log_b e, are summed with Fast2Sum (|K| >= |F|
    whenever k != 0), so their rounding errors and the products' low parts (fma) join the small
    terms and only the final addition rounds at full size.
    """
    if _LOG_K[base] is None:
        big, tail = k, None
    else:
        hi, lo = _LOG_K[base]
        big = o.mul(k, hi)
        tail = o.fma(k, lo, o.fma(k, hi, o.neg(big)))
    if _LOG_F[base] is None:
        mid = f
    else:
        hi, lo = _LOG_F[base]
        mid = o.mul(f, hi)
        low = o.fma(f, lo, o.fma(f, hi, o.neg(mid)))
        tail = low if tail is None else o.add(tail, low)
    s = o.add(big, mid)
    err = o.sub(mid, o.sub(s, big))  # exact: s + err = big + mid
    tail = err if tail is None else o.add(err, tail)
    if correction is not None:
        tail = o.add(tail, correction)
    small = o.mul(o.mul(f, f), _horner(o, f, _LOG_C[base]))
    return o.add(s, o.add(tail, small))


def _log_f32(o: _Ops, x, base: str):
    k, f = _log_reduce_f32(o, x)
    y = _log_combine_f32(o, k, f, base)
    return _fix(o, y, (o.isnan(x), x), (o.lt(x, 0.0), NAN), (o.eq(x, 0.0), -INF), (o.eq(x, INF), INF))


@_register("log", 32)
def log_f32(o, x):
    """Natural logarithm; log(+-0) = -inf, log(x < 0) = NaN."""
    return _log_f32(o, x, "e")


@_register("log2", 32)
def log2_f32(o, x):
    """Base-2 logarithm (exact at powers of two)."""
    return _log_f32(o, x, "2")


@_register("log10", 32)
def log10_f32(o, x):
    """Base-10 logarithm."""
    return _log_f32(o, x, "10")


def _log1p_f32_core(o: _Ops, v, v_lo=None):
    """log(1 + v + v_lo) for v > -1 (v_lo: an optional tiny low part of the argument).

    u = 1 + v is rounded; its rounding error c = v - (u - 1) (exact for |v| < 2^100, where the
    correction matters) plus v_lo enters as the correction c / u, since
    log(u + c) = log(u) + c/u + O(c^2).
    """
    u = o.add(v, 1.0)
    c = o.sub(v, o.sub(u, 1.0))
    c = o.sel(o.lt(o.abs(v), 2.0 ** 100), c, 0.0)  # huge (or infinite) v: no correction
    if v_lo is not None:
        c = o.add(c, v_lo)
    k, f = _log_reduce_f32(o, u)
    return _log_combine_f32(o, k, f, "e", correction=o.div(c, u))


@_register("log1p", 32)
def log1p_f32(o, x):
    """log(1 + x), accurate near 0; log1p(-1) = -inf, log1p(x < -1) = NaN."""
    y = _log1p_f32_core(o, x)
    return _fix(o, y, (o.isnan(x), x), (o.lt(x, -1.0), NAN), (o.eq(x, -1.0), -INF), (o.eq(x, INF), INF),
                (o.eq(x, 0.0), x))  # keeps the sign of zero


# ------------------------------------------------------------------------------------------------
# fp32 expm1, sigmoid, tanh
# ------------------------------------------------------------------------------------------------
# expm1(r) = r + r^2 P(r) on |r| <= ln2/2 (+0.05%); relative error below 2^-31.9.
_EXPM1_P = [0.5, 0.1666666567325592, 0.04166635870933533, 0.008333389647305012, 0.0013940668432042003,
            0.00019845883070956916]


@_register("expm1", 32)
def expm1_f32(o, x):
    """e^x - 1, accurate near 0.

    x = k ln2 + r with r kept as r_hi + r_lo (r_hi exact), so expm1(r) = r_hi + (r_lo + r^2 P(r))
    rounds once; then expm1(x) = 2^k expm1(r) + (2^k - 1) with one fma, computed at half scale
    (2^(k-1)) and doubled so that k = 128 (x up to the overflow threshold) needs no special case.
    """
    xc = o.clamp(x, -30.0, 89.0)  # expm1(x < -17.4) rounds to -1
    k = o.rint(o.mul(xc, _LOG2E))
    r_hi = o.fma(k, -_LN2_HI, xc)  # exact
    r_lo = o.mul(k, -_LN2_LO)
    r = o.add(r_hi, r_lo)
    em1 = o.add(r_hi, o.fma(o.mul(r, r), _horner(o, r, _EXPM1_P), r_lo))
    half_scale = _pow2i(o, o.isub(o.to_int(k), 1))
    y = o.mul(o.fma(half_scale, em1, o.sub(half_scale, 0.5)), 2.0)
    y = o.sel(o.eq(k, 0.0), em1, y)  # also keeps subnormal x exact
    return _fix(o, y, (o.isnan(x), x), (o.eq(x, 0.0), x))  # keeps the sign of zero


@_register("sigmoid", 32)
def sigmoid_f32(o, x):
    """1 / (1 + e^-x), as e / (1 + e) for x < 0 with e = e^-|x| (never overflows; subnormal
    results down to x = -103.9 are kept). Three roundings (e, 1 + e, the quotient): within 2 ulp;
    carrying e and 1 + e as fp32 pairs reaches 1 ulp but costs 60% more."""
    e = _exp_f32_core(o, o.max(o.neg(o.abs(x)), -104.0))
    numerator = o.sel(o.ge(x, 0.0), 1.0, e)
    y = o.div(numerator, o.add(e, 1.0))
    return _fix(o, y, (o.isnan(x), x))


# tanh(x) = x + x^3 H(x^2) on |x| <= 0.55; relative error below 2^-29.8.
_TANH_H = [-0.33333316445350647, 0.13332585990428925, -0.05385230854153633, 0.021071679890155792,
           -0.006274240091443062]
_TANH_SMALL = 0.55


@_register("tanh", 32)
def tanh_f32(o, x):
    """Odd polynomial for |x| < 0.55, else 1 - 2 / (1 + e^2|x|) (saturating to 1), sign of x."""
    a = o.abs(x)
    x2 = o.mul(x, x)
    small = o.fma(o.mul(x, x2), _horner(o, x2, _TANH_H), x)
    e = _exp_f32_core(o, o.min(o.add(a, a), 40.0))  # tanh(|x| > 9.02) rounds to 1
    large = o.copysign(o.sub(1.0, o.div(2.0, o.add(e, 1.0))), x)
    y = o.sel(o.lt(a, _TANH_SMALL), small, large)
    return _fix(o, y, (o.isnan(x), x), (o.eq(x, 0.0), x))  # keeps the sign of zero
