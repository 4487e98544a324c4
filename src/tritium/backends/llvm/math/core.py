"""The building blocks of the math library: instruction helpers for one float type (``_Ops``), shared
reductions and polynomial evaluation, and the registry ``emit`` dispatches through.
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
