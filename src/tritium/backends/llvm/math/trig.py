"""Trigonometric functions: fp32 sin, cos and tan (reduction by multiples of pi/2) and their
inverses (asin, acos, atan, atan2).
"""
from __future__ import annotations

from .core import F64, I32, INF, NAN, _Ops, _fix, _horner, _register, _split

# ------------------------------------------------------------------------------------------------
# fp32 sin, cos, tan: x = j pi/2 + r, |r| <= pi/4
# ------------------------------------------------------------------------------------------------
# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2), tan(r) = r + r^3 T(r^2), on
# |r| <= 1.01 pi/4; relative errors below 2^-37, 2^-32.8 and 2^-29.3.
_SIN_S = [-0.1666666716337204, 0.008333329111337662, -0.00019839232845697552, 2.717366669457988e-06]
_COS_C = [0.04166664555668831, -0.0013887251261621714, 2.4425680749118328e-05]
_TAN_T = [0.3333335220813751, 0.13332559168338776, 0.05407201126217842, 0.021218251436948776,
          0.011005093343555927, -0.00012924270413350314, 0.0044861133210361]
_TWO_OVER_PI = 0.63661977236758134308
# pi/2 = _PIO2[0] + _PIO2[1] + _PIO2[2] (each the fp32 rounding of what remains)
_PIO2 = (1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15)


def _trig_reduce_f32(o: _Ops, x):
    """(q, r): x = j pi/2 + r with j = rint(2x/pi), q = j mod 4 (an integer), |r| <= ~pi/4.

    Three-constant Cody-Waite reduction with fma: the first step x - j p1 is exact (p1 has the
    24 bits of fp32(pi/2), j p1 is a multiple of 2^-23 and the difference is below 1), the other
    two lose a rounding each, which is what limits sin and cos as |x| grows: within 1 ulp below
    2^19, 2 ulp below 2^21; from 2^22 on j p1 stops being exact and j may be chosen wrong, and
    the results, still in [-1, 1], are not accurate. Non-finite x is replaced by 0 (the callers
    return NaN for it).
    """
    xs = o.sel(o.isfinite(x), x, 0.0)
    j = o.add(o.rint(o.mul(xs, _TWO_OVER_PI)), 0.0)  # + 0: j = -0 would turn r = -0 into +0
    r = o.fma(j, -_PIO2[0], xs)
    r = o.fma(j, -_PIO2[1], r)
    r = o.fma(j, -_PIO2[2], r)
    jmod4 = o.sub(j, o.mul(o.floor(o.mul(j, 0.25)), 4.0))  # exact, in {0, 1, 2, 3}
    return o.to_int(jmod4), r


_PIO2_D = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)  # pi/2 as 3 fp64


def _trig_reduce_f32_wide(o: _Ops, x):
    """(q, r_hi, r_lo): x = j pi/2 + r with j = rint(2x/pi), q = j mod 4, r = r_hi + r_lo (fp32
    pair, |r| <= ~pi/4), the reduction done in fp64 with pi/2 as three fp64 constants.

    The first fma, x - j d1, is exact (j d1 is a multiple of 2^-52, x of 2^-52 or coarser, and
    the difference is below 1), so r is accurate to about 2^-53 relative while j = rint(2x/pi)
    is the right integer: |x| below about 2^44 (1.7e13); beyond that r is wrong (and may exceed
    pi/4, where tan's polynomial is meaningless). Non-finite x is replaced by 0 (the callers
    return NaN for it).
    """
    d = _Ops(o.b, F64)
    xd = o.widen(o.sel(o.isfinite(x), x, 0.0))
    j = d.add(d.rint(d.mul(xd, _TWO_OVER_PI)), 0.0)
    r = d.fma(j, -_PIO2_D[0], xd)
    r = d.fma(j, -_PIO2_D[1], r)
    r = d.fma(j, -_PIO2_D[2], r)
    jmod4 = d.sub(j, d.mul(d.floor(d.mul(j, 0.25)), 4.0))  # exact, in {0, 1, 2, 3}
    r_hi = o.narrow(r)
    r_lo = o.narrow(d.sub(r, o.widen(r_hi)))
    return o.b.fptosi(jmod4, I32), r_hi, r_lo


def _sin_poly(o: _Ops, r, r2):
    """sin(r) = r + r^3 S(r^2), the small term added last."""
    return o.fma(o.mul(r, r2), _horner(o, r2, _SIN_S), r)


def _cos_poly(o: _Ops, r, r2):
    """cos(r) = 1 + (-r^2/2 + r^4 C(r^2)): the low part of r^2 (fma) joins the small terms, and 1
    is added last."""
    r2_lo = o.fma(r, r, o.neg(r2))
    t = o.fma(o.mul(r2, r2), _horner(o, r2, _COS_C), o.mul(r2_lo, -0.5))
    return o.add(o.fma(r2, -0.5, t), 1.0)


def _flip_sign(o: _Ops, y, q_bit):
    """y with its sign flipped where bit 1 of the integer ``q_bit`` is set."""
    return o.as_float(o.ixor(o.as_int(y), o.shl(o.iand(q_bit, 2), 30)))


_TRIG_TINY = 2.0 ** -12  # sin(x) and tan(x) round to x below this


def _sincos_f32(o: _Ops, x, cosine: bool):
    q, r = _trig_reduce_f32(o, x)
    r2 = o.mul(r, r)
    s, c = _sin_poly(o, r, r2), _cos_poly(o, r, r2)
    odd = o.ieq(o.iand(q, 1), 1)
    if cosine:
        y = _flip_sign(o, o.sel(odd, s, c), o.iadd(q, 1))
    else:
        y = _flip_sign(o, o.sel(odd, c, s), q)
        y = o.sel(o.lt(o.abs(x), _TRIG_TINY), x, y)
    y = o.max(o.min(y, 1.0), -1.0)  # only matters where the reduction fails (|x| >= 2^22)
    return o.sel(o.isfinite(x), y, NAN)


@_register("sin", 32)
def sin_f32(o, x):
    """sine; NaN for +-inf."""
    return _sincos_f32(o, x, cosine=False)


@_register("cos", 32)
def cos_f32(o, x):
    """cosine; NaN for +-inf."""
    return _sincos_f32(o, x, cosine=True)


@_register("tan", 32)
def tan_f32(o, x):
    """tangent: tan(r), or -1/tan(r) in odd quadrants; NaN for +-inf.

    The reduction is done in fp64 (``_trig_reduce_f32_wide``): near its poles tan amplifies the
    reduced argument's error, which the fp32 reduction leaves at up to 1 ulp of r.

    tan(r) is kept as t_hi + t_lo (the rounding error of r + r^3 T), and -1/(t_hi + t_lo) is the
    quotient q = -1/t_hi corrected by the exact residual 1 + q t_hi (fma): q (1 + rho + q t_lo).
    """
    q, r, r_lo = _trig_reduce_f32_wide(o, x)
    r2 = o.mul(r, r)
    p = o.fma(o.mul(r, r2), _horner(o, r2, _TAN_T), r_lo)
    t = o.add(r, p)
    t_lo = o.sub(p, o.sub(t, r))  # |r| >= |p|: Fast2Sum
    inv = o.div(-1.0, t)
    rho = o.fma(inv, t, 1.0)
    inv = o.fma(inv, o.fma(inv, t_lo, rho), inv)
    odd = o.ieq(o.iand(q, 1), 1)
    y = o.sel(odd, inv, t)
    y = o.sel(o.lt(o.abs(x), _TRIG_TINY), x, y)
    return o.sel(o.isfinite(x), y, NAN)


# ------------------------------------------------------------------------------------------------
# fp32 inverse trigonometric functions
# ------------------------------------------------------------------------------------------------
# atan(t) = t + t^3 A(t^2) on [0, 1]; relative error below 2^-28.5.
_ATAN_A = [-0.33333298563957214, 0.19998548924922943, -0.14264242351055145, 0.10952185839414597,
           -0.0840345099568367, 0.05795760080218315, -0.031177852302789688, 0.010914607904851437,
           -0.001793622155673802]
# asin(x) = x + x^3 B(x^2) on [0, 1/2]; relative error below 2^-31.7.
_ASIN_B = [0.16666659712791443, 0.07500503957271576, 0.04451695457100868, 0.03180772066116333,
           0.014438589103519917, 0.03751647472381592]
_PIO2_HI, _PIO2_LO = _split(1.5707963267948966192313217)
_PI_HI, _PI_LO = _split(3.1415926535897932384626434)


def _atan_poly(o: _Ops, t):
    """atan(t) for 0 <= t <= 1 (within 1.3 ulp; exactly fp32(pi/4) at t = 1)."""
    t2 = o.mul(t, t)
    p = o.fma(o.mul(t, t2), _horner(o, t2, _ATAN_A), t)
    return o.sel(o.eq(t, 1.0), 0.7853981633974483, p)


def _minus_from(o: _Ops, hi: float, lo: float, p):
    """(hi + lo) - p for a constant hi + lo larger than p >= 0: one rounding at full size."""
    return o.add(hi, o.sub(lo, p))


@_register("atan", 32)
def atan_f32(o, x):
    """atan(t) on t = |x| or 1/|x| (then pi/2 - atan(t)), sign of x."""
    a = o.abs(x)
    inv = o.gt(a, 1.0)
    t = o.div(o.sel(inv, 1.0, a), o.sel(inv, a, 1.0))
    p = _atan_poly(o, t)
    y = o.sel(inv, _minus_from(o, _PIO2_HI, _PIO2_LO, p), p)
    return _fix(o, o.copysign(y, x), (o.isnan(x), x))


@_register("atan2", 32, arity=2)
def atan2_f32(o, y, x):
    """The angle of (x, y): atan(min/max) of |x| and |y|, placed in its octant; C99's special
    cases: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi, atan2(+-inf, +inf) = +-pi/4,
    atan2(+-inf, -inf) = +-3pi/4; NaN in, NaN out."""
    ax, ay = o.abs(x), o.abs(y)
    swap = o.gt(ay, ax)
    t = o.div(o.sel(swap, ax, ay), o.sel(swap, ay, ax))
    p = _atan_poly(o, t)
    # the angle is A + p or A - p for A in {0, pi/2, pi}: A = hi + lo, one rounding at the end
    x_negative = o.ilt(o.as_int(x), 0)
    a_hi = o.sel(swap, _PIO2_HI, o.sel(x_negative, _PI_HI, 0.0))
    a_lo = o.sel(swap, _PIO2_LO, o.sel(x_negative, _PI_LO, 0.0))
    p = o.sel(o.b.xor(swap, x_negative), o.neg(p), p)
    p = o.add(a_hi, o.add(a_lo, p))
    both_zero = o.both(o.eq(ax, 0.0), o.eq(ay, 0.0))
    both_inf = o.both(o.eq(ax, INF), o.eq(ay, INF))
    p = _fix(o, p, (both_zero, o.sel(x_negative, _PI_HI, 0.0)),
             (both_inf, o.sel(x_negative, 2.356194490192345, 0.7853981633974483)))
    return o.copysign(p, y)


def _asin_parts(o: _Ops, a):
    """For 1/2 < a <= 1: (s, w) with asin(a) = pi/2 - 2 (s + w), s = sqrt((1 - a)/2) rounded and
    w = its rounding error plus s^3 B(s^2) (small)."""
    z = o.mul(o.sub(1.0, a), 0.5)  # exact
    s = o.sqrt(z)
    s_lo = o.div(o.fma(o.neg(s), s, z), o.add(s, s))
    s_lo = o.sel(o.eq(z, 0.0), 0.0, s_lo)  # a = 1: not 0/0
    w = o.fma(o.mul(s, z), _horner(o, z, _ASIN_B), s_lo)
    return s, w


@_register("asin", 32)
def asin_f32(o, x):
    """x + x^3 B(x^2) for |x| <= 1/2, else pi/2 - 2 asin(sqrt((1 - |x|)/2)); NaN for |x| > 1."""
    a = o.abs(x)
    x2 = o.mul(x, x)
    small = o.fma(o.mul(x, x2), _horner(o, x2, _ASIN_B), x)
    s, w = _asin_parts(o, a)
    # pi/2 - 2s by Fast2Sum (its rounding error kept), then the small terms, one final rounding
    two_s = o.add(s, s)
    d_hi = o.sub(_PIO2_HI, two_s)
    d_lo = o.sub(o.sub(_PIO2_HI, d_hi), two_s)
    large = o.copysign(o.add(d_hi, o.sub(d_lo, o.sub(o.add(w, w), _PIO2_LO))), x)
    return o.sel(o.le(a, 0.5), small, large)


@_register("acos", 32)
def acos_f32(o, x):
    """pi/2 - asin(x) for |x| <= 1/2; 2 asin(sqrt((1 - x)/2)) for x > 1/2; pi - that of -x for
    x < -1/2; NaN for |x| > 1."""
    a = o.abs(x)
    x2 = o.mul(x, x)
    q = o.mul(o.mul(x, x2), _horner(o, x2, _ASIN_B))
    small = o.sub(_PIO2_HI, o.add(x, o.sub(q, _PIO2_LO)))
    s, w = _asin_parts(o, a)
    twice = o.mul(o.add(s, w), 2.0)
    negative = o.sub(_PI_HI, o.sub(o.mul(o.add(s, w), 2.0), _PI_LO))
    large = o.sel(o.lt(x, 0.0), negative, twice)
    return o.sel(o.le(a, 0.5), small, large)
