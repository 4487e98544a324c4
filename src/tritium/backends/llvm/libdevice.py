"""``tl.extra.libdevice`` functions, one lane at a time, as the interpreter defines them
(``numerics/libdevice.py``).

fp64 lanes call the C library (or an LLVM intrinsic for the exact functions). fp32 lanes follow
the GPU's flush-to-zero libdevice: subnormal arguments read as zeros (except for the functions
that keep them), the function is evaluated in fp64 and rounded once to fp32 (or, for the
transcendental functions of ``_VECTOR_FP32``, with the math library's fp32 vector polynomials,
within 1 ulp: 0 or 1 ulp from the interpreter's result), subnormal results become zeros (except
for those that keep them), and the measured quirks (cbrt, logb, ldexp, tgamma and erfc of
subnormals) hold. Integer-valued functions (isnan, ilogb, popc, clz, ...) are
computed exactly. The C library is resolved from the process when the object is loaded.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...numerics import libdevice as reference
from .types import F32, F64, I1, I32, I64

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_SMALLEST_NORMAL_32 = 2.0**-126

# name -> (C function on doubles, arity); evaluated on fp64 (fp32 arguments widened)
_LIBM = {
    "exp": ("exp", 1), "fast_expf": ("exp", 1), "exp2": ("exp2", 1), "expm1": ("expm1", 1), "log": ("log", 1),
    "fast_logf": ("log", 1), "log1p": ("log1p", 1), "log2": ("log2", 1), "log10": ("log10", 1),
    "pow": ("pow", 2), "sin": ("sin", 1), "cos": ("cos", 1), "tan": ("tan", 1), "asin": ("asin", 1),
    "acos": ("acos", 1), "atan": ("atan", 1), "atan2": ("atan2", 2), "sinh": ("sinh", 1), "cosh": ("cosh", 1),
    "tanh": ("tanh", 1), "asinh": ("asinh", 1), "acosh": ("acosh", 1), "atanh": ("atanh", 1),
    "hypot": ("hypot", 2), "cbrt": ("cbrt", 1), "erf": ("erf", 1), "erfc": ("erfc", 1), "lgamma": ("lgamma", 1),
    "tgamma": ("tgamma", 1), "fmod": ("fmod", 2), "remainder": ("remainder", 2), "exp10": ("exp10", 1),
}
# fp32 functions evaluated with the math library's vector polynomials (backends/llvm/math.py: within
# 1 ulp of the correctly rounded result over the whole domain, as the fp64 evaluation rounded once
# is within half of one) instead of a C library call per lane, which the loop vectorizer cannot
# widen: 5-10x faster in a loop. sin, cos and tan keep libm: the polynomials' argument reduction is
# accurate for |x| < 2^19 only, libdevice's everywhere. libdevice name -> the math library's.
_VECTOR_FP32 = {
    "exp": "exp", "exp2": "exp2", "exp10": "exp10", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "erf": "erf", "erfc": "erfc", "tanh": "tanh", "sinh": "sinh",
    "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "asin": "asin", "acos": "acos",
    "atan": "atan", "atan2": "atan2", "pow": "pow", "hypot": "hypot",
}
# name -> LLVM intrinsic (exact in any precision)
_INTRINSIC = {"floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "roundeven", "nearbyint": "roundeven",
              "sqrt": "sqrt", "sqrt_rn": "sqrt", "abs": "fabs", "fabs": "fabs", "copysign": "copysign",
              "round": "round"}
_DIVISIONS = {"div_rn", "fast_dividef"}


def supports(name: str) -> bool:
    return (name in _LIBM or name in _INTRINSIC or name in _DIVISIONS or name in _EXACT_RESULTS
            or name in ("rsqrt", "rcp_rn", "fmin", "fmax", "fdim", "saturatef", "fma", "fma_rn", "nextafter",
                        "ldexp", "scalbn", "logb", "llrint", "llround", "div_rz", "erfinv"))


def _declare(b, name, ret, args):
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ret, args), name)
    return fn


def _call(b, name, ret, values):
    return b.call(_declare(b, name, ret, [v.type for v in values]), values)


def _suffix(x) -> str:
    return "f32" if x.type == F32 else "f64"


def _flush(b, x):
    """An fp32 subnormal as a zero of its sign."""
    tiny = b.fcmp_ordered("<", _call(b, "llvm.fabs.f32", F32, [x]), ir.Constant(F32, _SMALLEST_NORMAL_32))
    zero = _call(b, "llvm.copysign.f32", F32, [ir.Constant(F32, 0.0), x])
    return b.select(tiny, zero, x)


def _is_subnormal(b, x):
    magnitude = _call(b, "llvm.fabs.f32", F32, [x])
    return b.and_(b.fcmp_ordered("!=", x, ir.Constant(F32, 0.0)),
                  b.fcmp_ordered("<", magnitude, ir.Constant(F32, _SMALLEST_NORMAL_32)))


def _fp64(b, name: str, args):
    """The function on fp64 lanes."""
    if name == "cbrt":
        return _polished_cbrt(b, args[0])
    if name in _LIBM:
        return _call(b, _LIBM[name][0], F64, args)
    if name in _INTRINSIC:
        return _call(b, f"llvm.{_INTRINSIC[name]}.f64", F64, args)
    if name == "erfinv":  # no libm function: the math library's (a first guess, Newton steps on libm's erf)
        from . import math

        return math.emit(b, "erfinv", args)
    x = args[0]
    one = ir.Constant(F64, 1.0)
    if name in _DIVISIONS:
        return b.fdiv(args[0], args[1])
    if name == "rsqrt":
        return b.fdiv(one, _call(b, "llvm.sqrt.f64", F64, [x]))
    if name == "rcp_rn":
        return b.fdiv(one, x)
    if name in ("fmin", "fmax"):
        from .scalar import float_extremum

        return float_extremum(b, args[0], args[1], name == "fmax", False)
    if name == "fdim":
        y = args[1]
        either_nan = b.fcmp_unordered("uno", x, y)
        difference = b.select(b.fcmp_ordered(">", x, y), b.fsub(x, y), ir.Constant(F64, 0.0))
        return b.select(either_nan, ir.Constant(F64, float("nan")), difference)
    if name == "saturatef":
        clipped = b.select(b.fcmp_ordered("<", x, ir.Constant(F64, 0.0)), ir.Constant(F64, 0.0), x)
        clipped = b.select(b.fcmp_ordered(">", clipped, one), one, clipped)
        return b.select(b.fcmp_unordered("uno", x, x), ir.Constant(F64, 0.0), clipped)
    if name in ("fma", "fma_rn"):
        return _call(b, "llvm.fma.f64", F64, args)
    if name == "nextafter":
        return _call(b, "nextafter", F64, args)
    if name in ("ldexp", "scalbn"):
        n = args[1]
        n = b.sext(n, I64) if n.type.width < 64 else n
        clipped = b.select(b.icmp_signed("<", n, ir.Constant(I64, -4096)), ir.Constant(I64, -4096), n)
        clipped = b.select(b.icmp_signed(">", clipped, ir.Constant(I64, 4096)), ir.Constant(I64, 4096), clipped)
        return _call(b, "ldexp", F64, [x, b.trunc(clipped, I32)])
    if name == "logb":
        return _call(b, "logb", F64, [x])
    if name == "div_rz":  # the quotient rounded to nearest, stepped toward zero when it went past
        y = args[1]
        q = b.fdiv(x, y)
        residual = _call(b, "llvm.fma.f64", F64, [b.fneg(q), y, x])
        finite = b.fcmp_ordered("<", _call(b, "llvm.fabs.f64", F64, [q]), ir.Constant(F64, float("inf")))
        inexact = b.and_(b.fcmp_ordered("!=", residual, ir.Constant(F64, 0.0)), finite)

        def negative(v):
            return b.icmp_signed("<", b.bitcast(v, I64), ir.Constant(I64, 0))

        too_big = b.and_(inexact, b.icmp_unsigned("!=", b.xor(negative(residual), negative(y)), negative(q)))
        bits = b.bitcast(q, I64)
        q = b.select(too_big, b.bitcast(b.sub(bits, ir.Constant(I64, 1)), F64), q)
        overflow = b.and_(b.fcmp_ordered("==", _call(b, "llvm.fabs.f64", F64, [q]), ir.Constant(F64, float("inf"))),
                          b.and_(b.fcmp_ordered("<", _call(b, "llvm.fabs.f64", F64, [x]), ir.Constant(F64, float("inf"))),
                                 b.and_(b.fcmp_ordered("<", _call(b, "llvm.fabs.f64", F64, [y]),
                                                       ir.Constant(F64, float("inf"))),
                                        b.fcmp_ordered("!=", y, ir.Constant(F64, 0.0)))))
        largest = _call(b, "llvm.copysign.f64", F64, [ir.Constant(F64, 1.7976931348623157e308), q])
        return b.select(overflow, largest, q)
    raise NotImplementedError(f"libdevice.{name}")


def _polished_cbrt(b, x):
    """libm's cube root mended by one Newton step with an exact residual (libm can be an ulp off on
    exact cubes: cbrt(-27.0) = -3.0000000000000004), as the interpreter's is."""
    y = _call(b, "cbrt", F64, [x])
    square = b.fmul(y, y)
    square_error = _call(b, "llvm.fma.f64", F64, [y, y, b.fneg(square)])  # y*y = square + square_error
    residual = b.fadd(_call(b, "llvm.fma.f64", F64, [square, y, b.fneg(x)]), b.fmul(square_error, y))
    polished = b.fsub(y, b.fdiv(residual, b.fmul(ir.Constant(F64, 3.0), square)))
    finite = b.fcmp_ordered("<", _call(b, "llvm.fabs.f64", F64, [y]), ir.Constant(F64, float("inf")))
    usable = b.and_(finite, b.fcmp_ordered("!=", y, ir.Constant(F64, 0.0)))
    return b.select(usable, polished, y)


_EXACT_RESULTS = {"isnan", "isinf", "isfinited", "finitef", "signbit", "ilogb", "popc", "clz"}


def _exact(b, name: str, x, out_ty):
    if name == "popc":
        return b.zext(_call(b, f"llvm.ctpop.i{x.type.width}", x.type, [x]), I32) if x.type.width < 32 else b.trunc(
            _call(b, f"llvm.ctpop.i{x.type.width}", x.type, [x]), I32) if x.type.width > 32 else _call(
            b, "llvm.ctpop.i32", I32, [x])
    if name == "clz":
        count = _call(b, f"llvm.ctlz.i{x.type.width}", x.type, [x, ir.Constant(I1, 0)])
        return b.zext(count, I32) if x.type.width < 32 else (b.trunc(count, I32) if x.type.width > 32 else count)
    wide = x if x.type == F64 else b.fpext(x, F64)
    magnitude = _call(b, "llvm.fabs.f64", F64, [wide])
    if name == "isnan":
        flag = b.fcmp_unordered("uno", wide, wide)
    elif name == "isinf":
        flag = b.fcmp_ordered("==", magnitude, ir.Constant(F64, float("inf")))
    elif name in ("isfinited", "finitef"):
        flag = b.fcmp_ordered("<", magnitude, ir.Constant(F64, float("inf")))
    elif name == "signbit":
        flag = b.icmp_signed("<", b.bitcast(wide, I64), ir.Constant(I64, 0))
    else:  # ilogb: INT_MIN for 0 and NaN, INT_MAX for +-inf
        exponent = _call(b, "ilogb", I32, [wide])
        zero_or_nan = b.or_(b.fcmp_ordered("==", wide, ir.Constant(F64, 0.0)), b.fcmp_unordered("uno", wide, wide))
        exponent = b.select(zero_or_nan, ir.Constant(I32, _INT32_MIN), exponent)
        infinite = b.fcmp_ordered("==", magnitude, ir.Constant(F64, float("inf")))
        return b.select(infinite, ir.Constant(I32, _INT32_MAX), exponent)
    return b.zext(flag, I32)


def lower(b: ir.IRBuilder, name: str, args: list, arg_types: list, out_type, out_ty: ir.Type):
    """One lane of ``libdevice.<name>``: ``args`` in their register types (floats as fp32 or fp64,
    the narrow types already widened by the caller), ``out_ty`` the result's register type."""
    if name in _EXACT_RESULTS:
        x = args[0]
        if arg_types[0].is_floating() and arg_types[0].is_fp32() and name not in reference._KEEPS_SUBNORMAL_ARGUMENTS:
            x = _flush(b, x)
        return _exact(b, name, x, out_ty)
    if name in ("llrint", "llround"):
        x = args[0] if args[0].type == F64 else b.fpext(args[0], F64)
        rounded = _call(b, "llvm.roundeven.f64" if name == "llrint" else "llvm.round.f64", F64, [x])
        return _call(b, "llvm.fptosi.sat.i64.f64", I64, [rounded])
    if not out_type.is_floating():  # abs of an integer
        x = args[0]
        if out_type.is_int_unsigned():
            return x
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.sub(ir.Constant(x.type, 0), x), x)
    if name not in ("ldexp", "scalbn"):  # integer arguments (pow's exponent) are values of the function
        args = [a if a.type in (F32, F64) else (b.sitofp(a, F64) if t.is_int_signed() else b.uitofp(a, F64))
                for a, t in zip(args, arg_types)]
    single = any(t.is_floating() and t.is_fp32() for t in arg_types)  # fp16/bf16 lanes: evaluated in fp64
    if not single:
        wide = [b.fpext(a, F64) if a.type == F32 else a for a in args]
        return _fp64(b, name, wide)
    given = args[0]
    if name not in reference._KEEPS_SUBNORMAL_ARGUMENTS:
        args = [_flush(b, a) if a.type == F32 else a for a in args]
    if name == "nextafter":
        result = _nextafter_ftz(b, args[0], args[1])
    elif name == "div_rz":
        from .casts import f64_to_f32_toward_zero

        result = f64_to_f32_toward_zero(b, b.fdiv(b.fpext(args[0], F64), b.fpext(args[1], F64)))
    elif name in _VECTOR_FP32 and all(a.type == F32 for a in args):
        from . import math

        result = math.emit(b, _VECTOR_FP32[name], args)
    else:
        wide = [b.fpext(a, F64) if a.type == F32 else a for a in args]
        result = b.fptrunc(_fp64(b, name, wide), F32)
    if name not in reference._KEEPS_SUBNORMAL_RESULTS:
        result = _flush(b, result)
    return _quirks(b, name, given, result)


def _nextafter_ftz(b, x, y):
    step = _call(b, "nextafterf", F32, [x, y])
    magnitude = _call(b, "llvm.fabs.f32", F32, [step])
    subnormal = b.and_(b.fcmp_ordered("!=", step, ir.Constant(F32, 0.0)),
                       b.fcmp_ordered("<", magnitude, ir.Constant(F32, _SMALLEST_NORMAL_32)))
    away = b.and_(subnormal, b.fcmp_ordered(">", magnitude, _call(b, "llvm.fabs.f32", F32, [x])))
    normal = _call(b, "llvm.copysign.f32", F32, [ir.Constant(F32, _SMALLEST_NORMAL_32), step])
    return b.select(away, normal, step)


def _quirks(b, name: str, x, result):
    """What libdevice's flush-to-zero paths give for some fp32 arguments (measured on an H200)."""
    subnormal = _is_subnormal(b, x)
    if name == "cbrt":
        return b.select(subnormal, ir.Constant(F32, float("nan")), result)
    if name == "logb":
        return b.select(subnormal, ir.Constant(F32, -150.0), result)
    if name in ("ldexp", "scalbn"):
        return b.select(subnormal, b.fadd(x, x), result)
    if name == "tgamma":
        positive = b.fcmp_ordered(">", x, ir.Constant(F32, 0.0))
        return b.select(b.and_(subnormal, positive), ir.Constant(F32, float("inf")), result)
    if name == "erfc":
        wide = b.fpext(x, F64)
        underflows = b.and_(b.fcmp_ordered(">", wide, ir.Constant(F64, 0.0)),
                            b.fcmp_ordered(">", b.fmul(wide, wide), ir.Constant(F64, reference._LN_SMALLEST_NORMAL_32)))
        return b.select(underflows, ir.Constant(F32, 0.0), result)
    return result
