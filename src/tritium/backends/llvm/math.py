"""Elementwise math functions as LLVM IR, one scalar lane at a time.

``emit(builder, name, args)`` computes ``name(*args)`` on scalar ``float`` (fp32) or ``double``
(fp64) values, all of one type, and returns a value of that type. ``FUNCTIONS`` maps each name it
knows to the float widths it supports.

fp32 functions are our own code: range reduction, a minimax polynomial evaluated with fma, and a
fix-up of the special values, written without branches or calls (``select`` picks between the
cases), so LLVM's loop vectorizer turns a loop that calls them into packed code at the machine's
native width. The only intrinsics used are the ones that are instructions on x86-64 (fma, fabs,
floor, ceil, trunc, roundeven, copysign, sqrt); the exponent is read and 2^k is built with
integer bit manipulation. Some fp32 functions compute internally in fp64 where fp32 alone would
need double-float arithmetic (pow, cbrt, erfc, the hyperbolics, their inverses): fp64 arithmetic
vectorizes as well, at half the width.

fp64 functions call the C library (``exp``, ``log``, ...: declared in the module, resolved from the
process at JIT time); the ones C99 lacks are built from libm calls and arithmetic: sigmoid, rsqrt,
erfinv (a first guess refined by Newton steps on libm's erf and erfc), exp10 (``pow(10, x)``).

Polynomial coefficients are weighted minimax fits (a Remez exchange run in mpmath at 40 digits,
the weight chosen so that the error minimized is the relative error of the final result), rounded
to fp32 (for erf and erfinv one at a time, lowest power first, refitting the others). No lookup
tables.

Accuracy of the fp32 functions
------------------------------
The maximum distance in ulp to the correctly rounded result (the fp64 reference rounded to fp32;
the distance counts the fp32 values between the two, so powers of two and subnormals need no
special care; NaN and infinities must match exactly), measured with ``benchmarks/math_ulp.py``'s
harness on every 61st fp32 bit pattern (70 million inputs per function, all binades, subnormals
included); on every 7th for exp, exp2, log, log2, sigmoid, tanh, erf, expm1, log1p and rsqrt
(613 million), every 3rd below 2^19 for sin and cos, every 5th of [0, 1] for erfinv, every 7th
below 2^44 for tan; on 2^24 random pairs plus 2^24 typical ones for the two-argument functions.
``tests/backends/test_llvm_math.py`` asserts these bounds on 200k samples per function. "measured
0" means correctly rounded on every input checked; the bound claimed is still 1.

==============  ===  ==========================================================================
function        ulp  domain where the bound holds; notes
==============  ===  ==========================================================================
exp             1    all; inf above 88.72283, subnormal results rounded once, 0 below -103.97
exp2            1    all; exact at integers
exp10           1    all
expm1           1    all
log             1    all (subnormal x is scaled by 2^23 first)
log2            1    all; exact at powers of two
log10           1    all
log1p           1    all
sigmoid         2    all; three roundings (e^-|x|, 1 + e, the quotient)
tanh            1    all; +-1 from |x| = 9.01
erf             1    all
erfc            1    all (fp64 internally)
erfinv          1    [-1, 1]; +-inf at +-1, NaN outside
sin, cos        1    |x| < 2^19; 2 ulp below 2^21 (sampled); from 2^22 on not accurate (the fp32
                     reduction fails), but the results stay in [-1, 1]
tan             1    |x| < 2^44 (reduction in fp64); not accurate beyond (may even be +-inf)
asin, acos      1    [-1, 1]
atan            1    all
atan2           1    all pairs (sampled); C99's special cases
sinh, cosh      1    all (fp64 internally); cosh measured 0
asinh, acosh    1    all (fp64 internally); acosh measured 0
atanh           1    all (fp64 internally); measured 0
pow             1    all pairs (sampled; fp64 internally); C99's special cases
sqrt            0    all (IEEE square root)
rsqrt           1    all (sqrt, quotient, one Newton step on the exact residual)
cbrt            1    all (fp64 Newton steps); measured 0
floor, ceil     0    exact
trunc, round    0    exact (round: halfway cases away from zero, as C)
rint, fabs      0    exact (rint: halfway cases to even)
fmod            0    exact (all pairs, sampled)
hypot           1    all pairs (sampled; fp64 internally); measured 0
==============  ===  ==========================================================================

Throughput (benchmarks/math_ulp.py, typical arguments in cache, 2-core AVX-512 machine, loops built
as the CPU backend builds them: 16 fp32 lanes, results scaled by 2^k with ``vscalefps``): exp 2.5
Gelem/s (1.2x numpy's), log 0.73x, sin 0.83x, sigmoid 2.0x numpy's 1 / (1 + exp(-x)); erf 1.6-1.8
Gelem/s (numpy has no fp32 erf; 1.46 before its e^L was built for its range, in the same runs).
"""
from __future__ import annotations

import struct
from typing import Callable

import llvmlite.ir as ir

F32 = ir.FloatType()
F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)

INF = float("inf")
NAN = float("nan")


# ------------------------------------------------------------------------------------------------
# Instruction helpers for one float type
# ------------------------------------------------------------------------------------------------
# The attribute of an llvmlite module whose target scales float vectors by powers of two in one
# instruction; set with ``use_hardware_ldexp``.
HARDWARE_LDEXP = "tritium_hardware_ldexp"


def use_hardware_ldexp(module: ir.Module) -> None:
    """Marks ``module`` as compiled for a target with a vector ldexp instruction (x86's AVX-512
    ``vscalefps``): the functions built in it scale their results with ``llvm.ldexp``, one
    instruction instead of nine, with the same bits. Elsewhere LLVM would call the C library's
    ldexp lane by lane, so a module is marked only for such a target."""
    setattr(module, HARDWARE_LDEXP, True)


class _Ops:
    """Builds instructions on one float type (``float`` or ``double``) and its same-width integer.

    Every helper takes and returns ``ir.Value``s; Python numbers given where a float value is
    expected become constants of the type (rounded to it).
    """

    def __init__(self, b: ir.IRBuilder, ty: ir.Type):
        self.b = b
        self.ty = ty
        self.bits = 32 if isinstance(ty, ir.FloatType) else 64
        self.ity = ir.IntType(self.bits)
        self.mant = 23 if self.bits == 32 else 52  # stored mantissa bits
        self.bias = 127 if self.bits == 32 else 1023
        self.suffix = "f32" if self.bits == 32 else "f64"
        self.hardware_ldexp = getattr(b.module, HARDWARE_LDEXP, False)

    # constants and conversions -----------------------------------------------------------------
    def c(self, value) -> ir.Value:
        if isinstance(value, ir.Value):
            return value
        return ir.Constant(self.ty, float(value))

    def i(self, value) -> ir.Value:
        if isinstance(value, ir.Value):
            return value
        return ir.Constant(self.ity, int(value))

    def to_int(self, x):
        """fptosi to the same-width integer; x must already be an integer value in range."""
        return self.b.fptosi(self.c(x), self.ity)

    def to_float(self, n):
        return self.b.sitofp(self.i(n), self.ty)

    def as_int(self, x):
        return self.b.bitcast(self.c(x), self.ity)

    def as_float(self, n):
        return self.b.bitcast(self.i(n), self.ty)

    # float arithmetic --------------------------------------------------------------------------
    def add(self, x, y):
        return self.b.fadd(self.c(x), self.c(y))

    def sub(self, x, y):
        return self.b.fsub(self.c(x), self.c(y))

    def mul(self, x, y):
        return self.b.fmul(self.c(x), self.c(y))

    def div(self, x, y):
        return self.b.fdiv(self.c(x), self.c(y))

    def neg(self, x):
        return self.b.fneg(self.c(x))

    def intrinsic(self, name: str, *args):
        """Calls ``llvm.<name>.<f32|f64>`` on arguments of this type (declared on first use)."""
        full = f"llvm.{name}.{self.suffix}"
        module = self.b.module
        fn = module.globals.get(full)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(self.ty, [self.ty] * len(args)), full)
        return self.b.call(fn, [self.c(a) for a in args])

    def fma(self, x, y, z):
        """x * y + z with one rounding."""
        return self.intrinsic("fma", x, y, z)

    def abs(self, x):
        return self.intrinsic("fabs", x)

    def floor(self, x):
        return self.intrinsic("floor", x)

    def ceil(self, x):
        return self.intrinsic("ceil", x)

    def trunc(self, x):
        return self.intrinsic("trunc", x)

    def rint(self, x):
        """Nearest integer, ties to even (independent of the rounding mode)."""
        return self.intrinsic("roundeven", x)

    def sqrt(self, x):
        return self.intrinsic("sqrt", x)

    def copysign(self, x, y):
        return self.intrinsic("copysign", x, y)

    # comparisons and selection -----------------------------------------------------------------
    def lt(self, x, y):
        return self.b.fcmp_ordered("<", self.c(x), self.c(y))

    def lt_or_nan(self, x, y):
        """x < y, or either is NaN."""
        return self.b.fcmp_unordered("<", self.c(x), self.c(y))

    def le(self, x, y):
        return self.b.fcmp_ordered("<=", self.c(x), self.c(y))

    def gt(self, x, y):
        return self.b.fcmp_ordered(">", self.c(x), self.c(y))

    def ge(self, x, y):
        return self.b.fcmp_ordered(">=", self.c(x), self.c(y))

    def eq(self, x, y):
        return self.b.fcmp_ordered("==", self.c(x), self.c(y))

    def ne(self, x, y):
        """Not equal, or unordered."""
        return self.b.fcmp_unordered("!=", self.c(x), self.c(y))

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", self.c(x), self.c(x))

    def isinf(self, x):
        return self.eq(self.abs(x), INF)

    def isfinite(self, x):
        return self.lt(self.abs(x), INF)

    def sel(self, cond, x, y):
        return self.b.select(cond, self.c(x), self.c(y))

    def either(self, p, q):
        return self.b.or_(p, q)

    def both(self, p, q):
        return self.b.and_(p, q)

    def min(self, x, y):
        """The smaller one; y when either is NaN (``minps``'s rule)."""
        return self.sel(self.lt(x, y), x, y)

    def max(self, x, y):
        """The larger one; y when either is NaN (``maxps``'s rule)."""
        return self.sel(self.gt(x, y), x, y)

    def clamp(self, x, lo, hi):
        """x limited to [lo, hi]; NaN becomes hi (callers restore NaN in their fix-up)."""
        return self.max(self.min(x, hi), lo)

    # integers of the same width ----------------------------------------------------------------
    def iadd(self, n, m):
        return self.b.add(self.i(n), self.i(m))

    def isub(self, n, m):
        return self.b.sub(self.i(n), self.i(m))

    def shl(self, n, s: int):
        return self.b.shl(self.i(n), self.i(s))

    def ashr(self, n, s: int):
        return self.b.ashr(self.i(n), self.i(s))

    def lshr(self, n, s: int):
        return self.b.lshr(self.i(n), self.i(s))

    def iand(self, n, m):
        return self.b.and_(self.i(n), self.i(m))

    def ior(self, n, m):
        return self.b.or_(self.i(n), self.i(m))

    def ixor(self, n, m):
        return self.b.xor(self.i(n), self.i(m))

    def ieq(self, n, m):
        return self.b.icmp_signed("==", self.i(n), self.i(m))

    def ilt(self, n, m):
        return self.b.icmp_signed("<", self.i(n), self.i(m))

    def isel(self, cond, n, m):
        return self.b.select(cond, self.i(n), self.i(m))

    # conversions between the two float types ---------------------------------------------------
    def widen(self, x):
        """fp32 -> fp64 (exact)."""
        return self.b.fpext(x, F64)

    def narrow(self, x):
        """fp64 -> fp32, rounded once to nearest even (overflow to inf, underflow to subnormals)."""
        return self.b.fptrunc(x, F32)


# ------------------------------------------------------------------------------------------------
# Shared building blocks
# ------------------------------------------------------------------------------------------------
def _f32(value: float) -> float:
    """value rounded to the nearest fp32, as a Python float."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _horner(o: _Ops, x, coeffs):
    """c0 + c1 x + c2 x^2 + ... evaluated with fma, highest power first."""
    acc = o.c(coeffs[-1])
    for coeff in reversed(coeffs[:-1]):
        acc = o.fma(acc, x, coeff)
    return acc


def _pow2i(o: _Ops, k):
    """2^k as a float, for an integer k in the normal exponent range (built from its bits)."""
    return o.as_float(o.shl(o.iadd(k, o.bias), o.mant))


def _ldexp(o: _Ops, p, k):
    """p * 2^k for p near 1 and |k| up to about twice the exponent range, rounded once.

    Where the target scales vectors in one instruction (``use_hardware_ldexp``), ``llvm.ldexp``
    (AVX-512's ``vscalefps``). Elsewhere the scale is split in two powers of two, 2^(k >> 1) and
    2^(k - (k >> 1)), each a normal number: ``p * 2^(k >> 1)`` is exact and the second product
    rounds once, to a subnormal, to zero or to infinity when the result lies there. Both give the
    correctly rounded p * 2^k, so the same bits.
    """
    if o.hardware_ldexp:
        name = f"llvm.ldexp.{o.suffix}.i{o.bits}"
        module = o.b.module
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(o.ty, [o.ty, o.ity]), name)
        return o.b.call(fn, [o.c(p), k])
    k1 = o.ashr(k, 1)
    k2 = o.isub(k, k1)
    return o.mul(o.mul(p, _pow2i(o, k1)), _pow2i(o, k2))


def _fix(o: _Ops, value, *cases):
    """``value`` with special cases substituted: ``cases`` are (condition, replacement) pairs, the
    first true condition winning."""
    for cond, replacement in reversed(cases):
        value = o.sel(cond, replacement, value)
    return value


def _split(value: float) -> tuple[float, float]:
    """A constant as an fp32 pair hi + lo (hi the rounded value, lo the rounded remainder)."""
    hi = _f32(value)
    return hi, _f32(value - hi)


# ------------------------------------------------------------------------------------------------
# Registry
# ------------------------------------------------------------------------------------------------
FUNCTIONS: dict[str, tuple[int, ...]] = {}
_ARITY: dict[str, int] = {}
_IMPL: dict[tuple[str, int], Callable] = {}


def _register(name: str, bits: int, arity: int = 1):
    def wrap(fn):
        _IMPL[(name, bits)] = fn
        _ARITY[name] = arity
        FUNCTIONS[name] = tuple(sorted(set(FUNCTIONS.get(name, ())) | {bits}))
        return fn

    return wrap


def emit(builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """``name(*args)`` on scalar fp32 or fp64 values of one type; the result has that type.

    Raises KeyError for a name (or a width of it) this module does not provide.
    """
    if name not in FUNCTIONS:
        raise KeyError(f"math function {name!r} is not provided by tritium.backends.llvm.math "
                       f"(it has: {', '.join(sorted(FUNCTIONS))})")
    args = list(args)
    if len(args) != _ARITY[name]:
        raise TypeError(f"math function {name!r} takes {_ARITY[name]} argument(s), got {len(args)}")
    ty = args[0].type
    if any(a.type != ty for a in args):
        raise TypeError(f"math function {name!r}: arguments of different types "
                        f"({', '.join(str(a.type) for a in args)})")
    if isinstance(ty, ir.FloatType):
        bits = 32
    elif isinstance(ty, ir.DoubleType):
        bits = 64
    else:
        raise TypeError(f"math function {name!r} takes float or double scalars, got {ty}")
    if bits not in FUNCTIONS[name]:
        raise KeyError(f"math function {name!r} has no fp{bits} version")
    return _IMPL[(name, bits)](_Ops(builder, ty), *args)


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
