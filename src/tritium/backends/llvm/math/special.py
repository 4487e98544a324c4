"""The error function family: fp32 erf, erfc and erfinv (fp32 and fp64).
"""
from __future__ import annotations

from .core import F64, INF, NAN, _Ops, _fix, _horner, _register
from .exponential import _LN2_HI, _LOG2E, _exp_of_reduced, _libm, _log1p_f32_core
from .wide import _exp_wide

# ------------------------------------------------------------------------------------------------
# fp32 erf
# ------------------------------------------------------------------------------------------------
# erf(x) = x + x E(x^2) on |x| <= 0.875 (E = erf(x)/x - 1); relative error below 2^-30.
_ERF_SMALL = [0.12837916612625122, -0.3761262893676758, 0.11283622682094574, -0.026855364441871643,
              0.005190940573811531, -0.0008026313735172153, 7.866249507060274e-05]
# log(erfc(x)) = L(x) on [0.875, 3.93], fitted for the absolute error of erf = 1 - e^L (below 2^-33).
_ERF_LARGE = [0.00016358631546609104, -1.1294611692428589, -0.6334564685821533, -0.10815874487161636,
              0.025040527805685997, -0.004140963777899742, 0.00042822747491300106, -2.055419099633582e-05]
_ERF_SMALL_LIMIT = 0.875
_ERF_ONE = 3.93  # erf(|x| >= 3.93) rounds to 1


_SHIFTER = 12582912.0  # 1.5 * 2^23: u + 1.5 * 2^23 rounds u to an integer, kept in the low mantissa bits


def _exp_of_log_erfc(o: _Ops, t):
    """e^t for t in [-20, 0.01], the cheap way that range allows: erf's L(min(|x|, 3.93)) lies in
    [-17.42, -1.53] where it is used, in [-1.53, 1.7e-4] for |x| < 0.875 (the branch discarded).

    k = rint(t log2 e) is read off the mantissa of t log2 e + 1.5 * 2^23, and 2^k is added to the
    exponent of e^r as an integer (the result is normal: no clamps, no ldexp). One-constant
    reduction: |k| <= 29, so r = t - k fp32(ln 2) is off by at most 29 |ln 2 - fp32(ln 2)| < 6e-8,
    a relative 6e-8 in e^t < 0.22: 0.22 ulp of erf in [0.78, 1), within its 1-ulp bound
    (checked over every fp32 input in benchmarks/math_ulp.py)."""
    shifted = o.fma(t, _LOG2E, _SHIFTER)
    k = o.sub(shifted, _SHIFTER)  # exact
    r = o.fma(k, -_LN2_HI, t)
    p = _exp_of_reduced(o, r)
    # the low bits of as_int(shifted) are k (two's complement): shifted by 23 they are k << 23
    return o.as_float(o.iadd(o.as_int(p), o.shl(o.as_int(shifted), o.mant)))


@_register("erf", 32)
def erf_f32(o, x):
    """x + x E(x^2) for |x| < 0.875, else sign(x) (1 - exp(L(|x|))) with L ~ log(erfc).
    NaN takes the first branch (an unordered comparison), which returns it."""
    a = o.abs(x)
    small = o.fma(x, _horner(o, o.mul(x, x), _ERF_SMALL), x)
    t = _horner(o, o.min(a, _ERF_ONE), _ERF_LARGE)
    large = o.copysign(o.sub(1.0, _exp_of_log_erfc(o, t)), x)
    return o.sel(o.lt_or_nan(a, _ERF_SMALL_LIMIT), small, large)


# ------------------------------------------------------------------------------------------------
# erfinv
# ------------------------------------------------------------------------------------------------
# erfinv(x) = x p(w), w = -log(1 - x^2), as in Giles ("Approximating the erfinv function", GPU
# Computing Gems, 2011), with our own fits: p is a polynomial in t = w - 1.25 for w < 2.5, in
# t = sqrt(w) - c for 2.5 <= w < 7 and 7 <= w < 16.7 (fp32 reaches w = 15.95), plus a fourth
# piece up to w = 36.2 used only as the first guess of fp64. The constant term is an fp32 pair
# (hi, lo), so that x p = x hi + x (lo + t q(t)) is rounded once at full size. Relative errors of
# p with the coefficients as stored: 2^-31.0, 2^-27.3, 2^-26.7 and 2^-26.4.
_ERFINV_PIECES = (  # (w limit, centre, uses sqrt(w), c0 hi, c0 lo, [c1, ..., c8])
    (2.5, 1.25, False, 1.1895616054534912, -2.8358979164977427e-08,
     [0.24951963126659393, 0.0025116857141256332, -0.002253768965601921, 0.0001435870653949678,
      3.1145187676884234e-05, -5.036125912738498e-06, -3.106512451722665e-07, 1.1901575902584227e-07]),
    (7.0, 2.1134450435638428, True, 1.9637528657913208, 4.6425412847383996e-08,
     [0.9363692402839661, 0.08991027623414993, -0.06338340789079666, 0.01890970580279827,
      0.007237237878143787, -0.007415010593831539, -0.0002521729620639235, 0.0018955927807837725]),
    (16.7, 3.366157293319702, True, 3.20072078704834, -1.3975890666984014e-08,
     [1.0063689947128296, 0.004241793416440487, -0.002791777951642871, 0.0016806229250505567,
      -0.0011358576593920588, 0.0007008816464804113, -0.0002705948136281222, 2.8631930035771802e-05]),
    (INF, 5.0, True, 4.8499064445495605, 0.0,
     [1.0103002786636353, -0.00013955442409496754, -0.00021387875312939286, 7.823358464520425e-05,
      -2.1656956960214302e-05, 3.239287934775348e-06, 0.0, 0.0]),
)


def _erfinv_times(o: _Ops, x, w, s, s_lo, pieces):
    """x p(w) ~ erfinv(x), the piece of p chosen per lane by selecting its coefficients (so one
    polynomial is evaluated): s = sqrt(w) and s_lo its rounding error (or 0)."""
    def argument(piece):
        _, centre, use_sqrt = piece[:3]
        return o.add(o.sub(s, centre), s_lo) if use_sqrt else o.sub(w, centre)

    last = pieces[-1]
    c0_hi, c0_lo, coeffs, arg = o.c(last[3]), o.c(last[4]), [o.c(c) for c in last[5]], argument(last)
    for piece in reversed(pieces[:-1]):
        inside = o.lt(w, piece[0])
        c0_hi, c0_lo = o.sel(inside, piece[3], c0_hi), o.sel(inside, piece[4], c0_lo)
        coeffs = [o.sel(inside, c, prev) for c, prev in zip(piece[5], coeffs)]
        arg = o.sel(inside, argument(piece), arg)
    tail = o.fma(arg, _horner(o, arg, coeffs), c0_lo)
    return o.fma(x, c0_hi, o.mul(x, tail))


@_register("erfinv", 32)
def erfinv_f32(o, x):
    """Inverse error function on [-1, 1]: erfinv(+-1) = +-inf, NaN for |x| > 1.

    w = -log1p(-x^2) with the low part of x^2 (fma) passed to log1p, so w is accurate even where
    1 - x^2 cancels; sqrt(w) carries its rounding error fma(-s, s, w) / 2s into the argument.
    """
    x2 = o.mul(x, x)
    x2_lo = o.fma(x, x, o.neg(x2))
    w = o.neg(_log1p_f32_core(o, o.neg(x2), o.neg(x2_lo)))
    s = o.sqrt(w)
    s_lo = o.div(o.fma(o.neg(s), s, w), o.add(s, s))
    y = _erfinv_times(o, x, w, s, s_lo, _ERFINV_PIECES[:3])
    a = o.abs(x)
    return _fix(o, y, (o.isnan(x), x), (o.gt(a, 1.0), NAN), (o.eq(a, 1.0), o.copysign(INF, x)),
                (o.eq(x, 0.0), x))  # keeps the sign of zero


@_register("erfinv", 64)
def erfinv_f64(o, x):
    """Inverse error function in fp64: the fp32 design's first guess (to ~2^-25), then two Newton
    steps y -= f(y) sqrt(pi)/2 e^(y^2) on f(y) = erf(y) - |x| (|x| <= 1/2) or
    (1 - |x|) - erfc(y) (|x| > 1/2, where 1 - |x| is exact), with libm's erf, erfc and exp."""
    a = o.abs(x)
    w = o.neg(_libm(o, "log", o.mul(o.sub(1.0, a), o.add(1.0, a))))
    s = o.sqrt(w)
    y = _erfinv_times(o, a, w, s, o.c(0.0), _ERFINV_PIECES)
    small = o.le(a, 0.5)
    for _ in range(2):
        f = o.sel(small, o.sub(_libm(o, "erf", y), a), o.sub(o.sub(1.0, a), _libm(o, "erfc", y)))
        y = o.sub(y, o.mul(o.mul(f, 0.886226925452758), _libm(o, "exp", o.mul(y, y))))
    y = o.copysign(y, x)
    return _fix(o, y, (o.isnan(x), x), (o.gt(a, 1.0), NAN), (o.eq(a, 1.0), o.copysign(INF, x)),
                (o.eq(a, 0.0), x))


# erfc(a) = t exp(-a^2 + P(t)), t = 2/(2 + a), for a >= 0 (the form of Numerical Recipes'
# erfcc, our own fit): P on t in [2/12.1, 1] (a <= 10.1, beyond which erfc underflows fp32),
# absolute error below 2^-33 (fp64 coefficients).
_ERFC_P = [-1.2655020855585524, 0.9996563994954335, 0.380253390153018, 0.03587863053707053,
           0.19618514189939718, -1.306198408690409, 3.3060789656719645, -7.037194320291376,
           10.404714653611867, -9.834492446843898, 5.831160072504449, -2.0734943381804056,
           0.3897574747030222, -0.026803128906289178]


@_register("erfc", 32)
def erfc_f32(o, x):
    """1 - erf(x) without cancellation: t exp(-a^2 + P(t)) in fp64 for a = |x| (2 minus that for
    x < 0), rounded once; erfc(x > 10.06) underflows to 0, erfc(-inf) = 2."""
    d = _Ops(o.b, F64)
    a = o.widen(o.min(o.abs(x), 10.1))
    t = d.div(2.0, d.add(a, 2.0))
    e = d.mul(t, _exp_wide(d, d.fma(d.neg(a), a, _horner(d, t, _ERFC_P))))
    e = d.sel(o.lt(x, 0.0), d.sub(2.0, e), e)
    y = o.narrow(e)
    return _fix(o, y, (o.isnan(x), x), (o.gt(x, 10.1), 0.0))
