"""Math on the GPU with Triton's instruction choices, so a kernel gives the bits it gives under Triton.

Read off Triton 3.6's PTX on an H200 (``benchmarks/gpu/triton_instruction_choices.py``): fp32
``exp`` is ``mul.f32`` by log2(e) then ``ex2.approx.f32``; ``exp2`` is ``ex2.approx.ftz.f32``;
``sqrt`` ``sqrt.approx.ftz.f32``; ``rsqrt`` ``rsqrt.approx.ftz.f32``; ``sqrt_rn`` ``sqrt.rn.f32``;
``/`` ``div.full.f32`` and ``div_rn`` ``div.rn.f32``; ``floor``/``ceil`` ``cvt.rmi``/``cvt.rpi`` with
``.ftz``; ``log``, ``log2``, ``sin``, ``cos``, ``erf`` and every fp64 function call libdevice
(``__nv_logf``, ...), linked with flush-to-zero on (as Triton links it). The narrow floats compute
in fp32 and round once, as everywhere in tritium.

Each entry is ``lower(codegen, op, args) -> value`` for one lane.
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm import casts
from ..llvm.types import F32, F64, I1, I32, arithmetic_type, register_type

LOWER: dict = {}
LOG2E = 1.4426950408889634


def lowers(*opcodes):
    def register(fn):
        for opcode in opcodes:
            LOWER[opcode] = fn
        return fn

    return register


def ptx(b: ir.IRBuilder, text: str, ty, args, constraints: str):
    """One PTX instruction as inline assembly without side effects (so LLVM may merge or drop it)."""
    return b.asm(ir.FunctionType(ty, [a.type for a in args]), text, constraints, args, side_effect=False)


def libdevice_call(b: ir.IRBuilder, symbol: str, ret, args):
    module = b.module
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), symbol)
    return b.call(fn, args)


def _unary(name_f32, name_f64):
    """``name_f32`` is a PTX instruction (``ex2.approx.ftz.f32``) or a libdevice symbol (``__nv_...``)."""

    def lower(cg, op, args):
        b = cg.b
        dtype = op.results[0].type.scalar
        x = casts.to_arithmetic(b, args[0], dtype)
        if x.type == F64:
            result = libdevice_call(b, name_f64, F64, [x]) if name_f64.startswith("__nv_") else ptx(
                b, f"{name_f64} $0, $1;", F64, [x], "=d,d")
        elif name_f32.startswith("__nv_"):
            result = libdevice_call(b, name_f32, F32, [x])
        else:
            result = ptx(b, f"{name_f32} $0, $1;", F32, [x], "=f,f")
        return casts.from_arithmetic(b, result, dtype)

    return lower


LOWER["exp2"] = _unary("ex2.approx.ftz.f32", "__nv_exp2")
LOWER["log"] = _unary("__nv_logf", "__nv_log")
LOWER["log2"] = _unary("__nv_log2f", "__nv_log2")
LOWER["sin"] = _unary("__nv_sinf", "__nv_sin")
LOWER["cos"] = _unary("__nv_cosf", "__nv_cos")
LOWER["erf"] = _unary("__nv_erff", "__nv_erf")
LOWER["sqrt"] = _unary("sqrt.approx.ftz.f32", "sqrt.rn.f64")
LOWER["sqrt_rn"] = _unary("sqrt.rn.f32", "sqrt.rn.f64")
LOWER["rsqrt"] = _unary("rsqrt.approx.ftz.f32", "__nv_rsqrt")
LOWER["floor"] = _unary("cvt.rmi.ftz.f32.f32", "cvt.rmi.f64.f64")
LOWER["ceil"] = _unary("cvt.rpi.ftz.f32.f32", "cvt.rpi.f64.f64")
# Math opcodes of the IR spec lowered as on the host (backends/llvm/scalar.py) because that is Triton's
# choice on a GPU too, each with why; every other one has its entry in LOWER (tests/compiler/test_ir_spec.py
# checks that each math opcode has one or the other).
PORTABLE_MATH: dict[str, str] = {}


def float_extremum(b: ir.IRBuilder, x, y, maximum: bool, propagate_nan: bool):
    """fp32 min/max as Triton's ``maxnumf``/``maximumf`` lower: PTX's ``max.f32`` (a NaN operand
    ignored, -0 below +0) and ``max.NaN.f32`` (a NaN operand gives NaN); one instruction instead of
    the portable compare-and-select sequence. Where both are NaN the result is the GPU's canonical
    NaN. fp64 keeps the portable sequence."""
    from ..llvm import scalar as lanes

    if x.type != F32:
        return lanes.float_extremum(b, x, y, maximum, propagate_nan)
    name = ("max" if maximum else "min") + (".NaN" if propagate_nan else "")
    return ptx(b, f"{name}.f32 $0, $1, $2;", F32, [x, y], "=f,f,f")


@lowers("minimum", "maximum")
def lower_extremum(cg, op, args):
    from ..llvm import scalar as lanes

    dtype = op.results[0].type.scalar
    if not dtype.is_floating():
        return lanes.lower_op(cg.b, op, args)
    propagate = op.attrs.get("propagate_nan", "none") == "all"
    return lanes.float_binary(cg.b, dtype, args,
                              lambda x, y: float_extremum(cg.b, x, y, op.opcode == "maximum", propagate))


@lowers("exp")
def lower_exp(cg, op, args):
    b = cg.b
    dtype = op.results[0].type.scalar
    x = casts.to_arithmetic(b, args[0], dtype)
    if x.type == F64:
        return libdevice_call(b, "__nv_exp", F64, [x])
    scaled = b.fmul(x, ir.Constant(F32, LOG2E))
    return casts.from_arithmetic(b, ptx(b, "ex2.approx.f32 $0, $1;", F32, [scaled], "=f,f"), dtype)


@lowers("div")
def lower_div(cg, op, args):
    from ..llvm import scalar as lanes

    b = cg.b
    dtype = op.results[0].type.scalar
    if not dtype.is_floating():
        return lanes.lower_op(b, op, args)
    x, y = (casts.to_arithmetic(b, a, dtype) for a in args)
    rounding = op.attrs.get("rounding", "rn")
    if dtype.is_fp32() and rounding in ("full", "approx"):
        result = ptx(b, f"div.{rounding}.f32 $0, $1, $2;", F32, [x, y], "=f,f,f")
    else:
        result = b.fdiv(x, y)
    return casts.from_arithmetic(b, result, dtype)


@lowers("libdevice")
def lower_libdevice(cg, op, args):
    b = cg.b
    result_type = op.results[0].type.scalar
    types = [o.type.scalar for o in op.operands]
    values = [casts.to_arithmetic(b, a, t) if t.is_floating() else a for a, t in zip(args, types)]
    values = [b.zext(v, I32) if v.type == I1 else v for v in values]
    ret = arithmetic_type(result_type) if result_type.is_floating() else register_type(result_type)
    wants_bool = ret == I1
    result = libdevice_call(b, op.attrs["symbol"], I32 if wants_bool else ret, values)
    if wants_bool:
        return b.icmp_unsigned("!=", result, ir.Constant(I32, 0))
    if result_type.is_floating():
        return casts.from_arithmetic(b, result, result_type)
    return result


@lowers("mod")
def lower_mod(cg, op, args):
    """Float ``%`` is C's fmod (the IR spec), from libdevice: exact, the sign of the dividend. (LLVM
    expands ``frem`` for NVPTX as x - trunc(x / y) * y, which is neither.)"""
    from ..llvm import scalar as lanes

    b = cg.b
    dtype = op.results[0].type.scalar
    if not dtype.is_floating():
        return lanes.lower_op(b, op, args)
    x, y = (casts.to_arithmetic(b, a, dtype) for a in args)
    symbol = "__nv_fmod" if x.type == F64 else "__nv_fmodf"
    return casts.from_arithmetic(b, libdevice_call(b, symbol, x.type, [x, y]), dtype)
