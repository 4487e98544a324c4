"""One lane of every elementwise op: the table ``LOWER`` of ``lower_<opcode>(b, op, args)``.

``args`` are the operands' lanes in their register types (``types``); the function returns the
result lane (a list for ops with several results). Each function gives exactly what the IR spec
(``compiler/ir/spec.py``) says, including the cases where a bare LLVM instruction would be poison
or undefined: shifts past the width, integer division by zero and ``INT_MIN // -1``, float ->
int of NaN or out of range, NaN-aware and sign-of-zero-aware minimum/maximum. A CPU backend calls
these inside its loops over a block; a GPU backend per lane a thread owns.
"""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir

from . import casts
from ...compiler.ir import types as _T
from ...compiler.ir.spec import MATH_OPCODES
from .types import F32, F64, I1, I32, I64, is_narrow_float, register_type

_FP64 = _T.float64

LOWER: dict[str, Callable] = {}


def lowers(*opcodes: str):
    def register(fn):
        for opcode in opcodes:
            LOWER[opcode] = fn
        return fn

    return register


def _scalar(value):
    return value.type.scalar


def _result(op):
    return op.results[0].type.scalar


def intrinsic(b: ir.IRBuilder, name: str, ret, values):
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ret, [v.type for v in values]), name)
    return b.call(fn, values)


def _fsuffix(ty) -> str:
    return "f32" if ty == F32 else "f64"


def float_binary(b, dtype, args, compute):
    """``compute`` on the operands (two, or more) in their arithmetic type, the result rounded back
    to ``dtype``."""
    wide = [casts.to_arithmetic(b, a, dtype) for a in args]
    return casts.from_arithmetic(b, compute(*wide), dtype)


def greater(b: ir.IRBuilder, x, y, dtype):
    """``x > y`` for one lane of ``dtype`` (false when either is NaN): the comparison of sort's network."""
    if dtype.is_floating():
        return b.fcmp_ordered(">", casts.to_arithmetic(b, x, dtype), casts.to_arithmetic(b, y, dtype))
    if dtype.is_int_signed() and not dtype.is_bool():
        return b.icmp_signed(">", x, y)
    return b.icmp_unsigned(">", x, y)


def accumulate_type(op):
    """The type a ``dot`` multiplies and accumulates in: i32 (i64) for integers, fp64 for an fp64
    result, else fp32."""
    a = op.operand("a").type.scalar
    out = op.results[0].type.scalar
    if a.is_int():
        return _T.int32 if out.primitive_bitwidth <= 32 else _T.int64
    return _T.float64 if out.is_fp64() else _T.float32


def truncate_tf32(b: ir.IRBuilder, x):
    """An fp32 lane with its low 13 mantissa bits dropped (``input_precision=tf32``)."""
    return b.bitcast(b.and_(b.bitcast(x, I32), ir.Constant(I32, 0xFFFFE000)), F32)


def lower_op(b: ir.IRBuilder, op, args: list):
    """The result lane(s) of the elementwise ``op`` on operand lanes ``args``."""
    try:
        fn = LOWER[op.opcode]
    except KeyError:
        raise NotImplementedError(f"no lowering of the {op.opcode} op to one lane") from None
    return fn(b, op, args)


# arithmetic ------------------------------------------------------------------------------------------
def _int_wrapping(name_int: str, bool_rule: str):
    def lower(b, op, args):
        ty = _result(op)
        x, y = args
        if ty.is_floating():
            fop = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[name_int]
            return float_binary(b, ty, args, fop)
        if ty.is_bool():
            return b.xor(x, y) if bool_rule == "xor" else b.and_(x, y)
        return {"add": b.add, "sub": b.sub, "mul": b.mul}[name_int](x, y)

    return lower


LOWER["add"] = _int_wrapping("add", "xor")
LOWER["sub"] = _int_wrapping("sub", "xor")
LOWER["mul"] = _int_wrapping("mul", "and")


@lowers("div")
def lower_div(b, op, args):
    ty = _result(op)
    if ty.is_floating():
        if op.attrs.get("rounding") == "approx":
            return float_binary(b, ty, args, lambda x, y: approx_divide(b, x, y))
        return float_binary(b, ty, args, b.fdiv)
    return lower_floordiv(b, op, args)


def approx_divide(b, x, y):
    """fp32 ``x / y`` as div.approx.f32 is documented (the IR spec's rounding=approx): correctly rounded
    for ``|y| <= 2**126``, ``x`` times a zero of ``y``'s sign beyond."""
    limit = ir.Constant(F32, 2.0**126)
    big = b.or_(b.fcmp_ordered(">", y, limit), b.fcmp_ordered("<", y, b.fneg(limit)))
    zero = b.select(b.fcmp_ordered("<", y, ir.Constant(F32, 0.0)), ir.Constant(F32, -0.0), ir.Constant(F32, 0.0))
    return b.select(big, b.fmul(x, zero), b.fdiv(x, y))


def _division_guards(b, ty, x, y):
    """(safe divisor, y == 0, x == MIN and y == -1) for integer division and remainder."""
    zero = ir.Constant(x.type, 0)
    by_zero = b.icmp_unsigned("==", y, zero)
    if ty.is_int_signed() and not ty.is_bool():
        minimum = ir.Constant(x.type, 1 << (x.type.width - 1))
        overflow = b.and_(b.icmp_unsigned("==", x, minimum), b.icmp_unsigned("==", y, ir.Constant(x.type, -1)))
    else:
        overflow = ir.Constant(I1, 0)
    safe = b.select(b.or_(by_zero, overflow), ir.Constant(x.type, 1), y)
    return safe, by_zero, overflow


@lowers("floordiv")
def lower_floordiv(b, op, args):
    ty = _result(op)
    x, y = args
    if ty.is_floating():  # not emitted by the frontend; floor of the quotient as Python's //
        return float_binary(b, ty, args, lambda p, q: intrinsic(b, f"llvm.floor.{_fsuffix(p.type)}", p.type,
                                                                 [b.fdiv(p, q)]))
    safe, by_zero, _ = _division_guards(b, ty, x, y)
    signed = ty.is_int_signed() and not ty.is_bool()
    quotient = b.sdiv(x, safe) if signed else b.udiv(x, safe)  # MIN // -1 divides by 1: MIN
    return b.select(by_zero, ir.Constant(x.type, -1), quotient)


@lowers("mod")
def lower_mod(b, op, args):
    ty = _result(op)
    x, y = args
    if ty.is_floating():
        return float_binary(b, ty, args, b.frem)
    safe, by_zero, _ = _division_guards(b, ty, x, y)
    signed = ty.is_int_signed() and not ty.is_bool()
    remainder = b.srem(x, safe) if signed else b.urem(x, safe)  # MIN % -1 is MIN % 1: 0
    return b.select(by_zero, x, remainder)


@lowers("and", "or", "xor")
def lower_bitwise(b, op, args):
    return {"and": b.and_, "or": b.or_, "xor": b.xor}[op.opcode](*args)


@lowers("shl", "shr")
def lower_shift(b, op, args):
    ty = _result(op)
    x, amount = args
    width = ir.Constant(x.type, x.type.width)
    too_far = b.icmp_unsigned(">=", amount, width)  # negative amounts are huge unsigned
    safe = b.select(too_far, ir.Constant(x.type, 0), amount)
    if op.opcode == "shl":
        return b.select(too_far, ir.Constant(x.type, 0), b.shl(x, safe))
    if ty.is_int_signed() and not ty.is_bool():
        fill = b.ashr(x, ir.Constant(x.type, x.type.width - 1))
        return b.select(too_far, fill, b.ashr(x, safe))
    return b.select(too_far, ir.Constant(x.type, 0), b.lshr(x, safe))


def float_extremum(b, x, y, maximum: bool, propagate_nan: bool):
    """min/max of two floats as the spec says: NaN ignored (or propagated), -0 < +0."""
    better = b.fcmp_ordered(">" if maximum else "<", x, y)
    chosen = b.select(better, x, y)  # x NaN: y
    chosen = b.select(casts.is_nan(b, y), x, chosen)  # y NaN: x (both NaN: NaN)
    bits = I32 if x.type == F32 else I64
    xb, yb = b.bitcast(x, bits), b.bitcast(y, bits)
    merged = b.bitcast(b.and_(xb, yb) if maximum else b.or_(xb, yb), x.type)  # equal: +0 wins max, -0 min
    chosen = b.select(b.fcmp_ordered("==", x, y), merged, chosen)
    if propagate_nan:
        either = b.fcmp_unordered("uno", x, y)
        chosen = b.select(either, b.fadd(x, y), chosen)
    return chosen


def int_extremum(b, x, y, maximum: bool, signed: bool):
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    return b.select(cmp(">" if maximum else "<", x, y), x, y)


@lowers("minimum", "maximum")
def lower_extremum(b, op, args):
    ty = _result(op)
    maximum = op.opcode == "maximum"
    if ty.is_floating():
        propagate = op.attrs.get("propagate_nan", "none") == "all"
        return float_binary(b, ty, args, lambda x, y: float_extremum(b, x, y, maximum, propagate))
    return int_extremum(b, *args, maximum, ty.is_int_signed() and not ty.is_bool())


@lowers("clamp")
def lower_clamp(b, op, args):
    ty = _result(op)
    if ty.is_floating():
        propagate = op.attrs.get("propagate_nan", "none") == "all"
        return float_binary(b, ty, args, lambda x, low, high: float_extremum(
            b, float_extremum(b, x, low, True, propagate), high, False, propagate))
    signed = ty.is_int_signed() and not ty.is_bool()
    return int_extremum(b, int_extremum(b, args[0], args[1], True, signed), args[2], False, signed)


@lowers("umulhi")
def lower_umulhi(b, op, args):
    ty = _result(op)
    x, y = args
    width = x.type.width
    wide = ir.IntType(2 * width)
    extend = b.sext if ty.is_int_signed() else b.zext
    product = b.mul(extend(x, wide), extend(y, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, width)), x.type)


@lowers("neg")
def lower_neg(b, op, args):
    ty = _result(op)
    (x,) = args
    if ty.is_floating():
        if is_narrow_float(ty):  # flip the sign bit
            return b.xor(x, ir.Constant(x.type, 1 << (x.type.width - 1)))
        return b.fneg(x)
    if ty.is_bool():
        return x
    return b.sub(ir.Constant(x.type, 0), x)


@lowers("not")
def lower_not(b, op, args):
    return b.xor(args[0], ir.Constant(args[0].type, -1))


@lowers("abs")
def lower_abs(b, op, args):
    ty = _result(op)
    (x,) = args
    if ty.is_floating():
        if is_narrow_float(ty):
            return b.and_(x, ir.Constant(x.type, (1 << (x.type.width - 1)) - 1))
        return intrinsic(b, f"llvm.fabs.{_fsuffix(x.type)}", x.type, [x])
    if ty.is_int_unsigned() or ty.is_bool():
        return x
    return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.sub(ir.Constant(x.type, 0), x), x)


@lowers("fma")
def lower_fma(b, op, args):
    ty = _result(op)
    if is_narrow_float(ty):  # in fp64: the product of two narrow values is exact, one rounding to fp32
        wide = [b.fpext(casts.widen_to_f32(b, a, ty), F64) for a in args]
        exact = intrinsic(b, "llvm.fma.f64", F64, wide)
        return casts.narrow_from_f32(b, casts.f64_to_f32_round_to_odd(b, exact), ty)
    return intrinsic(b, f"llvm.fma.{_fsuffix(args[0].type)}", args[0].type, args)


_PREDICATES = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@lowers("cmp")
def lower_cmp(b, op, args):
    ty = op.operands[0].type.scalar
    x, y = args
    predicate = _PREDICATES[op.attrs["predicate"]]
    if ty.is_ptr():
        return b.icmp_unsigned(predicate, b.ptrtoint(x, I64), b.ptrtoint(y, I64))
    if ty.is_floating():
        x, y = casts.to_arithmetic(b, x, ty), casts.to_arithmetic(b, y, ty)
        if predicate == "!=":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(predicate, x, y)
    if ty.is_int_signed() and not ty.is_bool():
        return b.icmp_signed(predicate, x, y)
    return b.icmp_unsigned(predicate, x, y)


@lowers("select")
def lower_select(b, op, args):
    return b.select(*args)


@lowers("addptr")
def lower_addptr(b, op, args):
    pointer, offset = args
    element = op.results[0].type.scalar.element_ty
    from .types import item_size

    source = op.operands[1].type.scalar
    if offset.type.width < 64:
        offset = b.sext(offset, I64) if source.is_int_signed() and not source.is_bool() else b.zext(offset, I64)
    size = item_size(element)
    return b.gep(pointer, [b.mul(offset, ir.Constant(I64, size))], source_etype=ir.IntType(8))


@lowers("cast")
def lower_cast(b, op, args):
    return casts.cast(b, args[0], op.operands[0].type.scalar, _result(op), op.attrs.get("rounding"))


@lowers("bitcast")
def lower_bitcast(b, op, args):
    target = register_type(_result(op))
    (x,) = args
    if x.type == target:
        return x
    return b.bitcast(x, target)


@lowers("ptr_to_int")
def lower_ptr_to_int(b, op, args):
    return b.ptrtoint(args[0], I64)


@lowers("int_to_ptr")
def lower_int_to_ptr(b, op, args):
    return b.inttoptr(args[0], register_type(_result(op)))


# math ---------------------------------------------------------------------------------------------------
def math_call(b, name: str, args, dtype):
    from . import math

    wide = [casts.to_arithmetic(b, a, dtype) for a in args]
    if name in ("sqrt", "sqrt_rn"):
        result = intrinsic(b, f"llvm.sqrt.{_fsuffix(wide[0].type)}", wide[0].type, wide)
    elif name in ("floor", "ceil", "trunc", "rint", "fabs"):
        llvm_name = {"rint": "roundeven"}.get(name, name)
        result = intrinsic(b, f"llvm.{llvm_name}.{_fsuffix(wide[0].type)}", wide[0].type, wide)
    elif name == "rsqrt":
        root = intrinsic(b, f"llvm.sqrt.{_fsuffix(wide[0].type)}", wide[0].type, wide)
        result = b.fdiv(ir.Constant(wide[0].type, 1.0), root)
    else:
        if name not in math.FUNCTIONS or wide[0].type.intrinsic_name[1:] not in map(str, math.FUNCTIONS[name]):
            raise NotImplementedError(f"the math function {name} on {dtype}")
        result = math.emit(b, name, wide)
    return casts.from_arithmetic(b, result, dtype)


def _lower_math(b, op, args):
    ty = _result(op)
    return math_call(b, op.opcode, args, ty)


for _name in MATH_OPCODES:
    LOWER[_name] = _lower_math

@lowers("libdevice")
def lower_libdevice(b, op, args):
    from . import libdevice

    ty = _result(op)
    fn = op.attrs["fn"]
    if not libdevice.supports(fn):
        raise NotImplementedError(f"libdevice.{fn}")
    types = [o.type.scalar for o in op.operands]
    wide = [casts.to_arithmetic(b, a, t) if t.is_floating() else a for a, t in zip(args, types)]
    result = libdevice.lower(b, fn, wide, types, ty, register_type(ty))
    if ty.is_floating():
        if result.type == F64 and not ty.is_fp64():
            return casts.cast(b, result, _FP64, ty)
        if result.type == F32 and not ty.is_fp32():
            return casts.from_arithmetic(b, result, ty)
        return result
    target = register_type(ty)
    if result.type != target:
        return b.trunc(result, target) if result.type.width > target.width else b.sext(result, target)
    return result




# random numbers -------------------------------------------------------------------------------------
_PHILOX = {32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
           64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)}


@lowers("philox")
def lower_philox(b, op, args):
    """Philox-4xW (Salmon et al., SC 2011) in the round order of Triton's philox_impl: four lanes."""
    c0, c1, c2, c3, k0, k1 = args
    width = c0.type.width
    mul_a, mul_b, key_a, key_b = _PHILOX[width]
    wide = ir.IntType(2 * width)

    def hi_lo(constant_value, x):
        product = b.mul(b.zext(x, wide), ir.Constant(wide, constant_value))
        return b.trunc(b.lshr(product, ir.Constant(wide, width)), x.type), b.trunc(product, x.type)

    for _ in range(op.attrs["n_rounds"]):
        hi_b, lo_b = hi_lo(mul_b, c2)
        hi_a, lo_a = hi_lo(mul_a, c0)
        c0, c1, c2, c3 = b.xor(b.xor(hi_b, c1), k0), lo_b, b.xor(b.xor(hi_a, c3), k1), lo_a
        k0 = b.add(k0, ir.Constant(k0.type, key_a))
        k1 = b.add(k1, ir.Constant(k1.type, key_b))
    return [c0, c1, c2, c3]
