"""``tl.inline_asm_elementwise`` on the host: a table of PTX instructions, each written as tl ops.

Kernels use inline PTX for a handful of instructions. With no GPU assembler behind the CPU
backends, each instruction of the table is composed from tl operations with the PTX ISA's
semantics, so it runs (and is checked) on every backend:

==========================  =====================================================================
``tanh.approx.f32``          tanh, correctly rounded (the instruction's maximum relative error is
                             2^-10.987; a GPU's result lies within that of this one)
``ex2.approx[.ftz].f32``     2^x, correctly rounded (PTX: within 2 ulp); ``.ftz`` flushes
                             subnormal inputs and results to zero of the same sign
``rcp.approx[.ftz].f32``     1/x, correctly rounded (PTX: within 1 ulp); ``.ftz`` as above
``rcp.rn.f32``               1/x, correctly rounded: exact
``sin.approx[.ftz].f32``     sin x, as tl.sin gives it (PTX: absolute error at most 2^-20.5 for
                             |x| <= 100 pi, larger beyond); ``.ftz`` as above
``cos.approx[.ftz].f32``     cos x, as tl.cos gives it, with the same bound
``cvt.rn.bf16x2.f32 d,a,b``  d = bf16(a) << 16 | bf16(b), each rounded to nearest even: exact
``cvt.rn.f16x2.f32 d,a,b``   the same with fp16 halves: exact
``prmt.b32 d,a,b,c``         byte permute, default mode: byte i of d is byte c[4i+2:4i] of {b, a},
                             replicated sign bit when c[4i+3] is set: exact
``lop3.b32 d,a,b,c,lut``     bit i of d = lut bit (a_i << 2 | b_i << 1 | c_i): exact
``mul.hi.{u32,s32}``         the high 32 bits of the 64-bit product: exact
``mul.lo.{u32,s32}``         the low 32 bits: exact
==========================  =====================================================================

Operands are ``$0`` (the result) and ``$1``... (the arguments in order); an immediate may be
written in the string (``lop3.b32 $0, $1, $2, $3, 0x96;``). ``pack`` must be 1. Any other asm is a
``NotImplementedError`` naming the instruction, which the frontend reports at the kernel's line.
"""
from __future__ import annotations

from .core import unwrap


def _instruction(asm: str) -> tuple[str, list[str]]:
    text = asm.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    statements = [s.strip() for s in text.split(";") if s.strip()]
    if len(statements) != 1:
        raise NotImplementedError(f"inline asm {asm!r} has {len(statements)} statements; tritium emulates a single "
                                  f"PTX instruction of its table (tritium/language/inline_asm.py)")
    opcode, _, rest = statements[0].partition(" ")
    return opcode.strip(), [o.strip() for o in rest.split(",")]


def _operand(text: str, args: list):
    if text.startswith("$"):
        index = int(text[1:])
        if index == 0 or index > len(args):
            raise NotImplementedError(f"operand {text} of the inline asm names no argument")
        return args[index - 1]
    try:
        return int(text, 0)
    except ValueError:
        raise NotImplementedError(f"operand {text!r} of the inline asm is neither $N nor an immediate") from None


def emulate(asm, constraints, args, dtype, is_pure, pack):
    """The result of one table instruction applied to ``args`` (tl tensors), as ``dtype``."""
    from ..compiler.ir import types as T
    from . import math as tlmath
    from . import standard as tlstd
    from .extra import libdevice

    asm, dtype, pack = unwrap(asm), unwrap(dtype), unwrap(pack)
    if isinstance(dtype, (tuple, list)):
        raise NotImplementedError("inline asm with several results is not emulated")
    if pack != 1:
        raise NotImplementedError(f"inline asm with pack={pack} is not emulated (pack=1 only)")
    opcode, operands = _instruction(str(asm))
    if not operands or operands[0] != "$0":
        raise NotImplementedError(f"inline asm {opcode}: the first operand must be the result $0")
    args = [unwrap(a) for a in args]
    values = [_operand(o, args) for o in operands[1:]]
    f32, u32 = T.float32, T.uint32

    def flush(x):  # a subnormal fp32 as a zero of its sign
        return tlstd.where(tlmath.abs(x) < 2.0 ** -126, x * 0.0, x)

    def real(v):  # an .f32 operand: a float converted, a 32-bit register's bits reinterpreted
        if v.dtype.is_floating():
            return v.to(f32)
        return v.to(f32, bitcast=True)

    def word(v):  # a 32-bit operand as uint32 bits (an immediate splat beside the tensors)
        if isinstance(v, int):
            return (args[0].to(u32, bitcast=True) & 0) | v
        return v.to(u32, bitcast=True)

    if opcode == "tanh.approx.f32":
        # subnormals are kept (libdevice's tanhf flushes them); tanh(x) rounds to x below 2^-12
        x = real(values[0])
        result = tlstd.where(tlmath.abs(x) < 2.0 ** -12, x, libdevice.tanh(x))
    elif opcode in ("ex2.approx.f32", "ex2.approx.ftz.f32"):
        x = real(values[0])
        result = tlmath.exp2(flush(x) if "ftz" in opcode else x)
        result = flush(result) if "ftz" in opcode else result
    elif opcode in ("rcp.approx.f32", "rcp.approx.ftz.f32", "rcp.rn.f32"):
        x = real(values[0])
        x = flush(x) if "ftz" in opcode else x
        result = tlmath.div_rn(x * 0.0 + 1.0, x)
        result = flush(result) if "ftz" in opcode else result
    elif opcode in ("sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32"):
        x = real(values[0])
        x = flush(x) if "ftz" in opcode else x
        result = tlmath.sin(x) if opcode.startswith("sin") else tlmath.cos(x)
        result = flush(result) if "ftz" in opcode else result
    elif opcode in ("cvt.rn.bf16x2.f32", "cvt.rn.f16x2.f32"):
        half = T.bfloat16 if "bf16" in opcode else T.float16

        def bits(x):
            return real(x).to(half).to(T.uint16, bitcast=True).to(u32)

        result = (bits(values[0]) << 16) | bits(values[1])
    elif opcode == "prmt.b32":
        a, b, selector = (word(v) for v in values)
        source = (b.to(T.uint64) << 32) | a.to(T.uint64)
        result = None
        for i in range(4):
            sel = (selector >> (4 * i)) & 0xF
            byte = ((source >> ((sel & 7) * 8).to(T.uint64)) & 0xFF).to(u32)
            sign = tlstd.where(((byte >> 7) & 1) != 0, byte | 0xFF, byte & 0)
            byte = tlstd.where((sel & 8) != 0, sign, byte) << (8 * i)
            result = byte if result is None else result | byte
    elif opcode == "lop3.b32":
        if len(values) != 4 or not isinstance(values[3], int):
            raise NotImplementedError("lop3.b32 takes three registers and an immediate lookup table")
        a, b, c = (word(v) for v in values[:3])
        lut = values[3]
        result = a ^ a
        for minterm in range(8):
            if (lut >> minterm) & 1:
                result = result | ((a if minterm & 4 else ~a) & (b if minterm & 2 else ~b) & (c if minterm & 1 else ~c))
    elif opcode in ("mul.hi.u32", "mul.hi.s32", "mul.lo.u32", "mul.lo.s32"):
        signed = opcode.endswith("s32")
        narrow, wide = (T.int32, T.int64) if signed else (u32, T.uint64)
        x, y = (word(v).to(narrow, bitcast=True).to(wide) for v in values)
        product = x * y
        result = (product >> 32).to(narrow) if ".hi." in opcode else product.to(narrow)
    else:
        raise NotImplementedError(
            f"inline asm instruction {opcode!r} is not in tritium's table of emulated PTX instructions "
            f"(tanh.approx.f32, ex2.approx[.ftz].f32, rcp.approx[.ftz].f32, rcp.rn.f32, sin.approx[.ftz].f32, "
            f"cos.approx[.ftz].f32, cvt.rn.bf16x2.f32, "
            f"cvt.rn.f16x2.f32, prmt.b32, lop3.b32, mul.hi/mul.lo.u32/s32)")
    if result.dtype == dtype:
        return result
    if result.dtype.primitive_bitwidth == dtype.primitive_bitwidth:
        return result.to(dtype, bitcast=True)
    return result.to(dtype)
