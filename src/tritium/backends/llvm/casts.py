"""Conversions between IR types, as ``cast`` in the IR spec defines them, one lane at a time.

The narrow floats are bits (``types``); they are widened to fp32 exactly and narrowed from fp32
by integer code that rounds once to nearest even (or toward zero), saturates fp8 and writes NaNs
as numpy and ml_dtypes do (the interpreter's conversions), so both give the same bits. Sources
wider than fp32 (fp64, 64-bit integers) are first rounded to odd in fp32: rounding that to a
type of at most 22 significant bits gives what rounding the wide value once gives.
"""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from .types import F32, F64, I1, I32, I64, is_narrow_float, register_type


@dataclass(frozen=True)
class NarrowFormat:
    """A float format narrower than fp32: exponent and mantissa widths, bias, and its special codes."""

    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_infinity: bool
    nan_code: int  # the positive quiet NaN numpy/ml_dtypes write
    saturate_to: float = 0.0  # casts clip to +-this first (fp8), 0: no saturation
    has_nan: bool = True  # fp8e4b15: every code is a number

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits


FORMATS = {
    "fp16": NarrowFormat(5, 10, 15, True, 0x7E00),
    "bf16": NarrowFormat(8, 7, 127, True, 0x7FC0),
    "fp8e5": NarrowFormat(5, 2, 15, True, 0x7E, 57344.0),
    "fp8e4nv": NarrowFormat(4, 3, 7, False, 0x7F, 448.0),
    "fp8e4b15": NarrowFormat(4, 3, 15, False, 0x7E, 1.75, has_nan=False),  # narrowed by narrow_to_fp8e4b15
}


def _const(ty, value):
    return ir.Constant(ty, value)


def _intrinsic(b: ir.IRBuilder, name: str, ret, args, values, name_suffix=""):
    module = b.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return b.call(fn, values)


def is_nan(b: ir.IRBuilder, x):
    return b.fcmp_unordered("uno", x, x)


def fabs(b: ir.IRBuilder, x):
    suffix = "f32" if x.type == F32 else "f64"
    return _intrinsic(b, f"llvm.fabs.{suffix}", x.type, [x.type], [x])


# narrow floats -> fp32 ------------------------------------------------------------------------------
def widen_to_f32(b: ir.IRBuilder, bits, dtype):
    """The fp32 value of the narrow float ``bits`` (exact; NaN payloads kept, as numpy does)."""
    fmt = FORMATS[dtype.name]
    if dtype.name == "bf16":
        return b.bitcast(b.shl(b.zext(bits, I32), _const(I32, 16)), F32)
    wide = b.zext(bits, I32)
    m, e = fmt.mantissa_bits, fmt.exponent_bits
    sign = b.shl(b.lshr(wide, _const(I32, fmt.bits - 1)), _const(I32, 31))
    exponent = b.and_(b.lshr(wide, _const(I32, m)), _const(I32, (1 << e) - 1))
    mantissa = b.and_(wide, _const(I32, (1 << m) - 1))
    # normal: rebias the exponent, move the mantissa up
    normal = b.or_(b.shl(b.add(exponent, _const(I32, 127 - fmt.bias)), _const(I32, 23)),
                   b.shl(mantissa, _const(I32, 23 - m)))
    # subnormal (and zero): mantissa * 2**(1 - bias - m), exact in fp32
    scale = 2.0 ** (1 - fmt.bias - m)
    subnormal = b.bitcast(b.fmul(b.uitofp(mantissa, F32), _const(F32, scale)), I32)
    magnitude = b.select(b.icmp_unsigned("==", exponent, _const(I32, 0)), subnormal, normal)
    top = (1 << e) - 1
    if fmt.has_infinity:
        # all-ones exponent: inf or NaN, the mantissa moved up (a NaN stays a NaN with its payload)
        special = b.or_(_const(I32, 0x7F800000), b.shl(mantissa, _const(I32, 23 - m)))
        magnitude = b.select(b.icmp_unsigned("==", exponent, _const(I32, top)), special, magnitude)
    elif fmt.has_nan:  # e4m3fn: only S.1111.111 is NaN
        nan = b.and_(wide, _const(I32, (1 << (fmt.bits - 1)) - 1))
        magnitude = b.select(b.icmp_unsigned("==", nan, _const(I32, (1 << (fmt.bits - 1)) - 1)),
                             _const(I32, 0x7FC00000), magnitude)
    return b.bitcast(b.or_(sign, magnitude), F32)


# fp32 -> narrow floats -------------------------------------------------------------------------------
def narrow_from_f32(b: ir.IRBuilder, x, dtype, rtz: bool = False, saturate: bool = False):
    """fp32 ``x`` rounded once to the narrow float ``dtype`` (its bits): to nearest even, or toward
    zero with ``rtz``. ``saturate`` (casts to fp8) clips to the largest finite value first (NaN stays
    NaN); arithmetic results are not saturated, as numpy's are not."""
    fmt = FORMATS[dtype.name]
    out_ty = ir.IntType(fmt.bits)
    if saturate and fmt.saturate_to:
        limit = _const(F32, fmt.saturate_to)
        magnitude_f = fabs(b, x)
        clipped = b.select(b.fcmp_ordered(">", magnitude_f, limit), limit, magnitude_f)
        x = _copysign(b, clipped, x)
    bits = b.bitcast(x, I32)
    sign = b.lshr(bits, _const(I32, 31))
    abs_bits = b.and_(bits, _const(I32, 0x7FFFFFFF))
    a = b.bitcast(abs_bits, F32)
    m, bias = fmt.mantissa_bits, fmt.bias
    shift = 23 - m
    # normal range of the target: round the fp32 mantissa at bit `shift`, then rebias
    odd = b.and_(b.lshr(abs_bits, _const(I32, shift)), _const(I32, 1))
    if rtz:
        rounded = abs_bits
    else:
        rounded = b.add(abs_bits, b.add(_const(I32, (1 << (shift - 1)) - 1), odd))
    normal = b.sub(b.lshr(rounded, _const(I32, shift)), _const(I32, (127 - bias) << m))
    # below the target's smallest normal: count units of its subnormal spacing
    units = b.fmul(a, _const(F32, 2.0 ** min(m + bias - 1, 127)))
    if rtz:
        units = _intrinsic(b, "llvm.trunc.f32", F32, [F32], [units])
    else:
        units = _intrinsic(b, "llvm.roundeven.f32", F32, [F32], [units])
    subnormal = b.fptoui(units, I32)
    if fmt.bias == 127:  # bf16: fp32's exponent range, its subnormals round at the same bit as normals
        code = normal
    else:
        min_normal = _const(F32, 2.0 ** (1 - bias))
        code = b.select(b.fcmp_ordered("<", a, min_normal), subnormal, normal)
    # overflow: past the largest finite value
    e_top = (1 << fmt.exponent_bits) - 1
    if fmt.has_infinity:
        max_finite = (e_top << m) - 1
        infinity = e_top << m
        overflow_code = max_finite if rtz else infinity
        code = b.select(b.icmp_signed(">", code, _const(I32, max_finite)), _const(I32, overflow_code), code)
        is_inf = b.icmp_unsigned("==", abs_bits, _const(I32, 0x7F800000))
        code = b.select(is_inf, _const(I32, infinity), code)
    else:
        max_finite = (e_top << m) | ((1 << m) - 2)  # S.1111.110 = 448
        code = b.select(b.icmp_signed(">", code, _const(I32, max_finite)), _const(I32, fmt.nan_code), code)
    # NaN: numpy keeps fp16 payloads (the top mantissa bits, at least one set); the others are canonical
    nan = b.fcmp_unordered("uno", x, x)
    if dtype.name == "fp16":
        payload = b.lshr(b.and_(abs_bits, _const(I32, 0x7FFFFF)), _const(I32, 13))
        payload = b.select(b.icmp_unsigned("==", payload, _const(I32, 0)), _const(I32, 1), payload)
        nan_code = b.or_(_const(I32, 0x7C00), payload)
    else:
        nan_code = _const(I32, fmt.nan_code)
    code = b.select(nan, nan_code, code)
    code = b.or_(code, b.shl(sign, _const(I32, fmt.bits - 1)))
    return b.trunc(code, out_ty)


def narrow_to_fp8e4b15(b: ir.IRBuilder, x, nan_keeps_sign: bool):
    """fp32 ``x`` as an fp8e4b15 code, as Triton converts (numerics/fp8e4b15.py): the magnitude clipped
    to 1.75 (NaN too), rounded to nearest with ties away from zero; a NaN keeps its sign only when
    ``nan_keeps_sign`` (an fp16 source)."""
    fmt = FORMATS["fp8e4b15"]
    bits = b.bitcast(x, I32)
    sign = b.lshr(bits, _const(I32, 31))
    if not nan_keeps_sign:
        sign = b.select(is_nan(b, x), _const(I32, 0), sign)
    a = fabs(b, x)
    limit = _const(F32, fmt.saturate_to)
    a = b.select(b.fcmp_unordered(">", a, limit), limit, a)  # NaN or above: 1.75
    abs_bits = b.bitcast(a, I32)
    shift = 23 - fmt.mantissa_bits
    # normal: add half a unit at bit `shift` (ties go up, away from zero), then rebias
    normal = b.sub(b.lshr(b.add(abs_bits, _const(I32, 1 << (shift - 1))), _const(I32, shift)),
                   _const(I32, (127 - fmt.bias) << fmt.mantissa_bits))
    # below the smallest normal: units of the subnormal spacing, rounded half away from zero
    units = _intrinsic(b, "llvm.round.f32", F32, [F32], [b.fmul(a, _const(F32, 2.0 ** (fmt.bias - 1 + fmt.mantissa_bits)))])
    subnormal = b.fptoui(units, I32)
    code = b.select(b.fcmp_ordered("<", a, _const(F32, 2.0 ** (1 - fmt.bias))), subnormal, normal)
    return b.trunc(b.or_(code, b.shl(sign, _const(I32, 7))), ir.IntType(8))


def _copysign(b, magnitude, sign_of):
    return _intrinsic(b, f"llvm.copysign.{'f32' if magnitude.type == F32 else 'f64'}", magnitude.type,
                      [magnitude.type, magnitude.type], [magnitude, sign_of])


# wide sources rounded to odd in fp32 ---------------------------------------------------------------
def f64_to_f32_round_to_odd(b: ir.IRBuilder, x):
    """fp64 -> fp32 rounded to odd: truncated toward zero, the last bit set when inexact."""
    nearest = b.fptrunc(x, F32)
    back = b.fpext(nearest, F64)
    bits = b.bitcast(nearest, I32)
    too_far = b.fcmp_ordered(">", fabs(b, back), fabs(b, x))
    toward_zero = b.select(too_far, b.sub(bits, _const(I32, 1)), bits)
    inexact = b.and_(b.fcmp_ordered("!=", back, x), b.fcmp_ordered("ord", x, x))
    finite_or_nan = b.select(inexact, b.or_(toward_zero, _const(I32, 1)), bits)
    return b.bitcast(finite_or_nan, F32)


def f64_to_f32_toward_zero(b: ir.IRBuilder, x):
    nearest = b.fptrunc(x, F32)
    back = b.fpext(nearest, F64)
    too_far = b.and_(b.fcmp_ordered(">", fabs(b, back), fabs(b, x)), b.fcmp_ordered("!=", fabs(b, x), _const(F64, float("inf"))))
    bits = b.bitcast(nearest, I32)
    return b.bitcast(b.select(too_far, b.sub(bits, _const(I32, 1)), bits), F32)


def int_to_f32_round_to_odd(b: ir.IRBuilder, x, signed: bool):
    """An integer of up to 64 bits as fp32 rounded to odd (exact when it has at most 24 bits)."""
    width = x.type.width
    if width < 64:
        x = b.sext(x, I64) if signed else b.zext(x, I64)
    negative = b.icmp_signed("<", x, _const(I64, 0)) if signed else _const(I1, 0)
    magnitude = b.select(negative, b.sub(_const(I64, 0), x), x) if signed else x  # INT64_MIN: 2**63 unsigned
    leading = _intrinsic(b, "llvm.ctlz.i64", I64, [I64, I1], [magnitude, _const(I1, 0)])
    length = b.sub(_const(I64, 64), leading)
    excess = b.sub(length, _const(I64, 24))
    wide = b.icmp_signed(">", excess, _const(I64, 0))
    shift = b.select(wide, excess, _const(I64, 0))
    kept = b.lshr(magnitude, shift)
    lost = b.and_(magnitude, b.sub(b.shl(_const(I64, 1), shift), _const(I64, 1)))
    sticky = b.zext(b.icmp_unsigned("!=", lost, _const(I64, 0)), I64)
    kept = b.or_(kept, sticky)
    value = b.uitofp(kept, F32)  # at most 24 bits: exact
    scale = b.bitcast(b.trunc(b.shl(b.add(shift, _const(I64, 127)), _const(I64, 23)), I32), F32)
    value = b.fmul(value, scale)
    return b.select(negative, b.fneg(value), value) if signed else value


# the cast op -------------------------------------------------------------------------------------
def cast(b: ir.IRBuilder, x, source, target, rounding=None):
    """``x`` (in ``source``'s register type) converted to ``target`` as the IR spec's ``cast``."""
    rtz = rounding == "rtz"
    if target.is_bool():
        if source.is_floating():
            wide = widen_to_f32(b, x, source) if is_narrow_float(source) else x
            return b.fcmp_unordered("!=", wide, ir.Constant(wide.type, 0.0))
        if source.is_ptr():
            return b.icmp_unsigned("!=", b.ptrtoint(x, I64), _const(I64, 0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    out = register_type(target)
    if source.is_floating() and target.is_int():
        wide = widen_to_f32(b, x, source) if is_narrow_float(source) else x
        kind = "fptosi" if target.is_int_signed() else "fptoui"
        name = f"llvm.{kind}.sat.i{out.width}.{'f32' if wide.type == F32 else 'f64'}"
        return _intrinsic(b, name, out, [wide.type], [wide])
    if source.is_int() and target.is_int():
        if out.width == x.type.width:
            return x
        if out.width < x.type.width:
            return b.trunc(x, out)
        return b.sext(x, out) if source.is_int_signed() and not source.is_bool() else b.zext(x, out)
    signed = source.is_int() and source.is_int_signed() and not source.is_bool()
    if source.is_int() and target.is_floating():
        if target.is_fp32() or target.is_fp64():
            return b.sitofp(x, out) if signed else b.uitofp(x, out)
        if target.is_fp8e4b15():
            return narrow_to_fp8e4b15(b, int_to_f32_round_to_odd(b, x, signed), nan_keeps_sign=False)
        return narrow_from_f32(b, int_to_f32_round_to_odd(b, x, signed), target, saturate=True)
    if source.is_floating() and target.is_floating():
        if source == target:
            return x
        if target.is_fp8e4b15():  # from fp16 or fp32 (the frontend refuses the others)
            wide = widen_to_f32(b, x, source) if is_narrow_float(source) else x
            if wide.type == F64:
                wide = f64_to_f32_round_to_odd(b, wide)
            return narrow_to_fp8e4b15(b, wide, nan_keeps_sign=source.is_fp16())
        if is_narrow_float(source):
            x = widen_to_f32(b, x, source)
            source_is = "fp32"
        else:
            source_is = source.name
        if target.is_fp32():
            if source_is == "fp64":
                return f64_to_f32_toward_zero(b, x) if rtz else b.fptrunc(x, F32)
            return x
        if target.is_fp64():
            return b.fpext(x, F64)
        if source_is == "fp64":
            x = f64_to_f32_round_to_odd(b, x)
        return narrow_from_f32(b, x, target, rtz, saturate=True)
    if source.is_ptr() and target.is_ptr():
        return x
    raise NotImplementedError(f"cast from {source} to {target}")


def to_arithmetic(b: ir.IRBuilder, x, dtype):
    """A register value in the type floats are computed in (narrow floats widened to fp32)."""
    return widen_to_f32(b, x, dtype) if is_narrow_float(dtype) else x


def from_arithmetic(b: ir.IRBuilder, x, dtype):
    """An fp32 result back in ``dtype``'s register type (narrow floats rounded to nearest even)."""
    assert not dtype.is_fp8e4b15(), "fp8e4b15 has no arithmetic: the frontend refuses it"
    return narrow_from_f32(b, x, dtype) if is_narrow_float(dtype) else x

