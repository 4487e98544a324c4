"""fp32 functions computed through fp64 cores (pow, cbrt, the hyperbolic functions and their
inverses, hypot), rsqrt, and the rounding, absolute value and remainder functions.
"""
from __future__ import annotations

from .core import F64, INF, NAN, _Ops, _fix, _horner, _pow2i, _register
from .exponential import _libm

# ------------------------------------------------------------------------------------------------
# fp64 cores for fp32 functions that need more than fp32 internally
# ------------------------------------------------------------------------------------------------
# log(m) = 2s + s^3 R(s^2), s = (m - 1)/(m + 1), m in [sqrt(1/2), sqrt(2)]; relative error below
# 2^-52 (fp64 coefficients).
_LOGD_R = [0.6666666666658749, 0.40000000052136664, 0.2857141715117711, 0.22223370226243527,
           0.18123687638793828, 0.16819303170182784]
# 2^r = 1 + r Q(r) on |r| <= 1/2; relative error below 2^-45.9.
_EXP2D_Q = [0.6931471805598851, 0.2402265069572282, 0.05550410866841566, 0.009618129181163839,
            0.0013333557625479294, 0.00015403440884494897, 1.5252990012494146e-05,
            1.3258335399187998e-06, 1.0148340930988971e-07]
_SQRT_HALF_BITS_D = 0x3FE6A09E667F3BCD  # fp64(sqrt(1/2))
_LOG2E_D = 1.4426950408889634


def _log_f64_wide(d: _Ops, v, base2: bool = True):
    """log2(v) (or ln v) in fp64 to about 2^-50 relative, for v positive and normal in fp64 (any
    widened fp32 but 0); 0 gives -inf, +inf gives +inf, NaN stays NaN (negative v: unspecified)."""
    iv = d.isub(d.as_int(v), _SQRT_HALF_BITS_D)
    k = d.to_float(d.ashr(iv, 52))
    m = d.as_float(d.iadd(d.iand(iv, (1 << 52) - 1), _SQRT_HALF_BITS_D))
    f = d.sub(m, 1.0)
    s = d.div(f, d.add(m, 1.0))
    z = d.mul(s, s)
    ln_m = d.fma(d.mul(s, z), _horner(d, z, _LOGD_R), d.add(s, s))
    if base2:
        y = d.fma(ln_m, _LOG2E_D, k)
    else:
        y = d.fma(k, 0.6931471805599453, ln_m)
    return _fix(d, y, (d.isnan(v), v), (d.eq(v, 0.0), -INF), (d.eq(v, INF), INF))


def _exp2_f64_wide(d: _Ops, z):
    """2^z in fp64 to about 2^-45 relative; z is clamped to [-400, 400] (beyond, any fp32 result
    is 0 or inf), NaN stays NaN."""
    zc = d.clamp(z, -400.0, 400.0)
    k = d.rint(zc)
    r = d.sub(zc, k)
    p = d.fma(r, _horner(d, r, _EXP2D_Q), 1.0)
    y = d.mul(p, _pow2i(d, d.to_int(k)))
    return _fix(d, y, (d.isnan(z), z))


# ------------------------------------------------------------------------------------------------
# fp32 pow
# ------------------------------------------------------------------------------------------------
def _is_integer(o: _Ops, y):
    return o.eq(o.trunc(y), y)  # false for NaN, true for +-inf


def _is_odd_integer(o: _Ops, y):
    """y is an odd integer (|y| >= 2^24 fp32 are all even)."""
    small = o.sel(o.lt(o.abs(y), 2.0 ** 24), y, 0.0)
    return o.both(_is_integer(o, y), o.ieq(o.iand(o.to_int(small), 1), 1))


@_register("pow", 32, arity=2)
def pow_f32(o, x, y):
    """x^y = 2^(y log2|x|) computed in fp64 (log2 to 2^-50, exp2 to 2^-45), rounded once to fp32;
    the sign for negative x and odd integer y, and C99's special cases (F.9.4.4): pow(x, +-0) = 1
    and pow(1, y) = 1 even for NaN, pow(-1, +-inf) = 1, pow(x < 0, non-integer y) = NaN,
    pow(+-0, y) and pow(+-inf, y) by the sign of y and its oddness."""
    d = _Ops(o.b, F64)
    z = d.mul(o.widen(y), _log_f64_wide(d, o.widen(o.abs(x))))
    r = o.narrow(_exp2_f64_wide(d, z))
    negative = o.ilt(o.as_int(x), 0)  # sign bit: -0 and -inf included
    r = o.sel(o.both(negative, _is_odd_integer(o, y)), o.neg(r), r)
    bad = o.both(o.both(o.lt(x, 0.0), o.isfinite(x)), o.both(o.isfinite(y), o.b.not_(_is_integer(o, y))))
    one = o.either(o.either(o.eq(y, 0.0), o.eq(x, 1.0)), o.both(o.eq(x, -1.0), o.isinf(y)))
    return _fix(o, r, (one, 1.0), (bad, NAN))


# ------------------------------------------------------------------------------------------------
# Roots
# ------------------------------------------------------------------------------------------------
def _sqrt_any(o, x):
    """Correctly rounded square root (llvm.sqrt: sqrtps / sqrtsd)."""
    return o.sqrt(x)


_register("sqrt", 32)(_sqrt_any)
_register("sqrt", 64)(_sqrt_any)


@_register("rsqrt", 32)
def rsqrt_f32(o, x):
    """1/sqrt(x): the quotient of the correctly rounded sqrt, then one Newton step on the exact
    residual 1 - x y^2 (y^2 as hi + lo by fma). x is scaled by 2^-+64 outside [2^-64, 2^64) so y^2
    stays normal. rsqrt(+0) = inf, rsqrt(-0) = -inf, rsqrt(inf) = 0, rsqrt(x < 0) = NaN."""
    big = o.ge(x, 2.0 ** 64)
    tiny = o.lt(x, 2.0 ** -64)
    xs = o.mul(x, o.sel(big, 2.0 ** -64, o.sel(tiny, 2.0 ** 64, 1.0)))
    post = o.sel(big, 2.0 ** -32, o.sel(tiny, 2.0 ** 32, 1.0))
    y = o.div(1.0, o.sqrt(xs))
    hi = o.mul(y, y)
    lo = o.fma(y, y, o.neg(hi))
    residual = o.fma(o.neg(xs), lo, o.fma(o.neg(xs), hi, 1.0))
    refined = o.fma(o.mul(y, 0.5), residual, y)
    special = o.either(o.eq(x, 0.0), o.b.not_(o.lt(x, INF)))  # 0, inf, NaN: the plain quotient
    return o.sel(special, o.div(1.0, o.sqrt(x)), o.mul(refined, post))


@_register("rsqrt", 64)
def rsqrt_f64(o, x):
    """1/sqrt(x) with two roundings (within 1 ulp)."""
    return o.div(1.0, o.sqrt(x))


# cbrt: a^(1/3) = a z^2 for z = a^(-1/3), which Newton's iteration z += z (1 - a z^3) / 3 finds
# without a division (the error e becomes -2 e^2). The first z comes from the bits, M - bits(a)/3
# (M fitted: relative error under 3.5%); two steps in fp32 (1e-5), two in fp64 (below 1e-16),
# and a z^2 rounded once to fp32.
_RCBRT_M = 0x54A232A2


def _rcbrt_step(o: _Ops, a, z):
    return o.fma(o.mul(z, 1.0 / 3.0), o.fma(o.neg(a), o.mul(o.mul(z, z), z), 1.0), z)


@_register("cbrt", 32)
def cbrt_f32(o, x):
    """Cube root, sign of x; cbrt(+-0) = +-0, cbrt(+-inf) = +-inf."""
    a = o.abs(x)
    # subnormals are scaled by 2^24 (the result by 2^-8), huge values by 2^-63 (2^21), so the
    # bit trick sees a normal number and z^3 stays normal
    tiny, big = o.lt(a, 2.0 ** -126), o.ge(a, 2.0 ** 64)
    a_s = o.mul(a, o.sel(tiny, 2.0 ** 24, o.sel(big, 2.0 ** -63, 1.0)))
    post = o.widen(o.sel(tiny, 2.0 ** -8, o.sel(big, 2.0 ** 21, 1.0)))
    z = o.as_float(o.isub(_RCBRT_M, o.b.udiv(o.as_int(a_s), o.i(3))))
    z = _rcbrt_step(o, a_s, _rcbrt_step(o, a_s, z))
    d = _Ops(o.b, F64)
    ad = o.widen(a_s)
    zd = _rcbrt_step(d, ad, _rcbrt_step(d, ad, o.widen(z)))
    r = o.narrow(d.mul(d.mul(d.mul(ad, zd), zd), post))
    r = o.copysign(r, x)
    return o.sel(o.either(o.eq(a, 0.0), o.b.not_(o.lt(a, INF))), x, r)


# ------------------------------------------------------------------------------------------------
# fp32 hyperbolic functions and their inverses, computed in fp64
# ------------------------------------------------------------------------------------------------
_HYP_TINY = 2.0 ** -12  # sinh, asinh, atanh round to x below this


def _exp_wide(d: _Ops, v):
    """e^v in fp64 to about 2^-45 relative for |v| up to ~200 (via 2^(v log2 e))."""
    return _exp2_f64_wide(d, d.mul(v, _LOG2E_D))


def _sinh_cosh_f32(o: _Ops, x, sinh: bool):
    d = _Ops(o.b, F64)
    a = o.widen(o.abs(x))
    e = _exp_wide(d, d.min(a, 200.0))
    inv = d.div(1.0, e)
    y = d.mul(d.sub(e, inv) if sinh else d.add(e, inv), 0.5)
    return o.narrow(y)


@_register("sinh", 32)
def sinh_f32(o, x):
    """(e^|x| - e^-|x|)/2 in fp64 (the cancellation costs at most 2^-33 relative for |x| >= 2^-12),
    sign of x; x itself below 2^-12."""
    y = o.copysign(_sinh_cosh_f32(o, x, True), x)
    return _fix(o, y, (o.lt(o.abs(x), _HYP_TINY), x), (o.isnan(x), x))


@_register("cosh", 32)
def cosh_f32(o, x):
    """(e^|x| + e^-|x|)/2 in fp64."""
    return _fix(o, _sinh_cosh_f32(o, x, False), (o.isnan(x), x))


@_register("asinh", 32)
def asinh_f32(o, x):
    """log(|x| + sqrt(x^2 + 1)) in fp64, sign of x; x itself below 2^-12."""
    d = _Ops(o.b, F64)
    a = o.widen(o.abs(x))
    y = _log_f64_wide(d, d.add(a, d.sqrt(d.fma(a, a, 1.0))), base2=False)
    y = o.copysign(o.narrow(y), x)
    return _fix(o, y, (o.lt(o.abs(x), _HYP_TINY), x), (o.isnan(x), x))


@_register("acosh", 32)
def acosh_f32(o, x):
    """log(x + sqrt(x^2 - 1)) in fp64 (x^2 - 1 is exact there near 1); NaN for x < 1."""
    d = _Ops(o.b, F64)
    xd = o.widen(x)
    y = o.narrow(_log_f64_wide(d, d.add(xd, d.sqrt(d.fma(xd, xd, -1.0))), base2=False))
    return _fix(o, y, (o.isnan(x), x), (o.lt(x, 1.0), NAN))


@_register("atanh", 32)
def atanh_f32(o, x):
    """log((1 + |x|)/(1 - |x|))/2 in fp64 (1 +- |x| exact), sign of x; atanh(+-1) = +-inf, NaN for
    |x| > 1; x itself below 2^-12."""
    d = _Ops(o.b, F64)
    a = o.widen(o.abs(x))
    y = d.mul(_log_f64_wide(d, d.div(d.add(1.0, a), d.sub(1.0, a)), base2=False), 0.5)
    y = o.copysign(o.narrow(y), x)
    a32 = o.abs(x)
    return _fix(o, y, (o.lt(a32, _HYP_TINY), x), (o.isnan(x), x), (o.gt(a32, 1.0), NAN))


# ------------------------------------------------------------------------------------------------
# Rounding, absolute value, remainder, hypot (both widths unless noted)
# ------------------------------------------------------------------------------------------------
def _intrinsic_function(intrinsic: str):
    return lambda o, x: o.intrinsic(intrinsic, x)


for _name, _intrinsic_name in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"), ("fabs", "fabs"),
                               ("rint", "roundeven")):
    _register(_name, 32)(_intrinsic_function(_intrinsic_name))
    _register(_name, 64)(_intrinsic_function(_intrinsic_name))


def _round_any(o, x):
    """Nearest integer, halfway cases away from zero (C's round): trunc(x) plus one step away from
    zero where the dropped fraction is at least 1/2 (x - trunc(x) is exact); sign of x kept."""
    t = o.trunc(x)
    step = o.sel(o.ge(o.abs(o.sub(x, t)), 0.5), o.copysign(1.0, x), 0.0)
    return o.copysign(o.add(t, step), x)


_register("round", 32)(_round_any)
_register("round", 64)(_round_any)


@_register("fmod", 32, arity=2)
def fmod_f32(o, x, y):
    """C's fmod: x - n y with n = trunc(x / y), exact (the result is representable).

    Computed in fp64 by long division, 26 bits of the quotient per step: the divisor is scaled
    by 2^s to within 2^26 of the remainder, q = trunc(X / (2^s Y)) (from 1/Y, off by at most 1),
    X - q 2^s Y by fma (exact: a multiple of Y's last bit below 2^53 of them), then one
    correction step. Twelve steps cover fp32's exponent range (2^128 / 2^-149). fmod(x, 0),
    fmod(+-inf, y) and NaNs give NaN; fmod(x, +-inf) = x.
    """
    d = _Ops(o.b, F64)
    big_x, big_y = o.widen(o.abs(x)), o.widen(o.abs(y))
    inv_y = d.div(1.0, big_y)
    y_exp = d.ashr(d.as_int(big_y), 52)  # biased exponents (Y is normal in fp64)
    rem = big_x
    for _ in range(12):
        shift = d.isub(d.isub(d.ashr(d.as_int(rem), 52), y_exp), 26)
        shift = d.isel(d.ilt(shift, 0), 0, shift)
        ys = d.mul(big_y, _pow2i(d, shift))
        q = d.trunc(d.mul(d.mul(rem, inv_y), _pow2i(d, d.isub(0, shift))))
        rem = d.fma(d.neg(q), ys, rem)
        rem = d.sel(d.lt(rem, 0.0), d.add(rem, ys), rem)
        rem = d.sel(d.ge(rem, ys), d.sub(rem, ys), rem)
    r = o.copysign(o.narrow(rem), x)
    bad = o.either(o.either(o.eq(y, 0.0), o.isinf(x)), o.either(o.isnan(x), o.isnan(y)))
    return _fix(o, r, (bad, NAN), (o.isinf(y), x))


@_register("hypot", 32, arity=2)
def hypot_f32(o, x, y):
    """sqrt(x^2 + y^2) in fp64 (no overflow, one final rounding); inf if either is infinite,
    even with a NaN (C99)."""
    d = _Ops(o.b, F64)
    xd, yd = o.widen(x), o.widen(y)
    r = o.narrow(d.sqrt(d.fma(xd, xd, d.mul(yd, yd))))
    return _fix(o, r, (o.either(o.isinf(x), o.isinf(y)), INF))


@_register("sigmoid", 64)
def sigmoid_f64(o, x):
    """1/(1 + e^-x) as e/(1 + e) for x < 0, e = e^-|x| (libm exp)."""
    e = _libm(o, "exp", o.neg(o.abs(x)))
    return o.div(o.sel(o.ge(x, 0.0), 1.0, e), o.add(e, 1.0))
