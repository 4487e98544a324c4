"""IR dtypes as LLVM types.

A value lives in a *register type*: i1 for booleans, iN for every integer (signedness is a
property of the op, not the type), float and double for fp32 and fp64, an opaque pointer for
pointers. The narrow floats (fp16, bf16, fp8e4nv, fp8e5) are kept as their bits (i16, i8) and
computed in fp32: each op widens its operands exactly, computes in fp32 and rounds the result to
the narrow type once. fp32 has more than twice the precision of every narrow type plus two bits,
so add, sub, mul, div and sqrt rounded that way are the correctly rounded narrow results.

In memory (global tensors and a backend's buffers) every type is stored as its register type,
except i1, which is one byte (as torch and numpy store bools).
"""
from __future__ import annotations

import struct

import llvmlite.ir as ir

from ...compiler.ir import types as T

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def is_narrow_float(dtype) -> bool:
    """fp16, bf16 and the fp8s: stored as bits, computed in fp32."""
    return dtype.is_floating() and dtype.primitive_bitwidth <= 16


def register_type(dtype) -> ir.Type:
    """The LLVM type a scalar of ``dtype`` (an IR scalar type) is held in."""
    dtype = dtype.scalar if hasattr(dtype, "scalar") and not isinstance(dtype, T.dtype) else dtype
    if dtype.is_ptr():
        return PTR
    if dtype.is_fp32():
        return F32
    if dtype.is_fp64():
        return F64
    return ir.IntType(dtype.primitive_bitwidth)


def memory_type(dtype) -> ir.Type:
    """The LLVM type one element of ``dtype`` occupies in memory."""
    if not dtype.is_ptr() and dtype.is_bool():
        return I8
    return register_type(dtype)


def item_size(dtype) -> int:
    if dtype.is_ptr():
        return 8
    return max(1, dtype.primitive_bitwidth // 8)


def arithmetic_type(dtype) -> ir.Type:
    """The type floats are computed in: fp32 for the narrow floats, else the register type."""
    return F32 if is_narrow_float(dtype) else register_type(dtype)


def constant(dtype, value) -> ir.Constant:
    """An LLVM constant of ``dtype``'s register type holding the Python ``value`` (floats rounded as
    the IR spec says: once, to nearest even)."""
    import numpy as np

    if dtype.is_ptr():
        return ir.Constant(I64, int(value)).inttoptr(PTR) if value else ir.Constant(PTR, None)
    if dtype.is_bool():
        return ir.Constant(I1, int(bool(value)))
    if dtype.is_int():
        bits = dtype.primitive_bitwidth
        return ir.Constant(ir.IntType(bits), int(value) & ((1 << bits) - 1))
    if dtype.is_fp32():
        return ir.Constant(F32, float(np.float32(value)))
    if dtype.is_fp64():
        return ir.Constant(F64, float(value))
    if dtype.is_fp8e4b15():
        from ...numerics import fp8e4b15

        return ir.Constant(I8, int(fp8e4b15.constant_code(value)[0]))
    bits = np.asarray(np.array([value], dtype=np.float64).astype(dtype.numpy)).view(
        np.uint8 if dtype.primitive_bitwidth == 8 else np.uint16)[0]
    return ir.Constant(ir.IntType(dtype.primitive_bitwidth), int(bits))


def scalar_bits(value, dtype) -> int:
    """A run-time scalar argument of IR type ``dtype`` as the bits of its register type (floats in
    their IEEE encoding, the narrow floats rounded to nearest even once), as an unsigned integer."""
    import struct

    import numpy as np

    if dtype.is_fp32():
        try:
            return struct.unpack("<I", struct.pack("<f", float(value)))[0]
        except OverflowError:  # beyond fp32's range: rounds to an infinity, as a C cast does
            with np.errstate(over="ignore"):
                return int(np.array([value], dtype=np.float64).astype(np.float32).view(np.uint32)[0])
    if dtype.is_fp64():
        return struct.unpack("<Q", struct.pack("<d", float(value)))[0]
    if dtype.is_fp8e4b15():
        from ...numerics import fp8e4b15

        return int(fp8e4b15.constant_code(value)[0])
    if dtype.is_floating():  # fp16/bf16/fp8 scalars: their bits
        bits = np.array([value], dtype=np.float64).astype(dtype.numpy)
        return int(bits.view(np.uint8 if dtype.primitive_bitwidth == 8 else np.uint16)[0])
    return int(value) & 0xFFFFFFFFFFFFFFFF


def integer_bits(value) -> int:
    """An integer scalar argument's bits, two's complement in 64 (a narrower parameter reads the low
    bytes)."""
    return int(value) & 0xFFFFFFFFFFFFFFFF


_FP32, _FP64, _U32, _U64 = (struct.Struct(code) for code in ("<f", "<d", "<I", "<Q"))


def _fp32_bits(value) -> int:
    try:
        return _U32.unpack(_FP32.pack(value))[0]
    except (OverflowError, struct.error):  # beyond fp32's range (an infinity), or not a float
        return scalar_bits(value, T.float32)


def _fp64_bits(value) -> int:
    try:
        return _U64.unpack(_FP64.pack(value))[0]
    except (OverflowError, struct.error):
        return scalar_bits(value, T.float64)


def parameter_plan(arg_names, args) -> list:
    """How a direct launcher turns each run-time argument into its parameter's bits: per IR argument
    (name, None) for a pointer (the tensor's address) or (name, value -> bits) for a scalar, the
    bits ``scalar_bits`` gives."""
    import functools

    plan = []
    for name, argument in zip(arg_names, args):
        ty = argument.type
        if ty.is_ptr():
            plan.append((name, None))
        elif ty.is_int():
            plan.append((name, integer_bits))
        elif ty.is_fp32():
            plan.append((name, _fp32_bits))
        elif ty.is_fp64():
            plan.append((name, _fp64_bits))
        else:
            plan.append((name, functools.partial(scalar_bits, dtype=ty)))
    return plan
