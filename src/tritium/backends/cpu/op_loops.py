"""One elementwise op of the CPU backend as a compiled loop over numpy arrays.

The interpreter evaluates the math functions (``exp`` ... ``erf``, ``libdevice``) with these loops,
so that it and the CPU backend give the same bits: the loop body is the backend's own lane
lowering (``backends/llvm/scalar.LOWER``: the math library's fp32 polynomials, libm for fp64,
libdevice's flush-to-zero rules), compiled for this CPU with the backend's target machine and
pipeline, as a kernel is. ``evaluate(op, args)`` runs ``op`` on the arrays ``args``.

A loop is ``void map(ptr noalias in_0, ..., ptr noalias out, i64 n)``; each is compiled once per
process, at its first use, keyed by what the lane lowering reads: the opcode, the ``fn``
attribute, the operands' and the result's dtypes.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Optional, Sequence

import numpy as np

from ...numerics import native_loops

_lock = threading.Lock()
_loops: dict = {}  # key -> _Loop
_FUNCTION = "tritium_op_loop"


class _Loop:
    def __init__(self, loaded, arity: int):
        self.loaded = loaded  # keeps the code alive
        address = loaded.address(_FUNCTION)
        signature = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (arity + 1)), ctypes.c_int64)
        self.call = signature(address)


def key(op) -> tuple:
    """What the lane lowering of ``op`` reads: one compiled loop per key."""
    return (op.opcode, op.attrs.get("fn"), tuple(str(o.type.scalar) for o in op.operands),
            str(op.results[0].type.scalar))


def build(op) -> str:
    """The LLVM IR of the loop computing ``op`` elementwise (memory types as the backend's)."""
    from llvmlite import ir

    from ..llvm import math as lmath
    from ..llvm import scalar
    from ..llvm.types import I1, I8, I64, PTR, memory_type, register_type
    from . import jit

    module = ir.Module(name=f"op_loop_{op.opcode}")
    module.triple = jit.host_cpu()[0]
    if jit.wide_vectors():
        lmath.use_hardware_ldexp(module)
    arity = len(op.operands)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * (arity + 1) + [I64]), _FUNCTION)
    for argument in fn.args[:-1]:
        argument.add_attribute("noalias")
    *inputs, out, n = fn.args
    entry, loop, done = (fn.append_basic_block(name) for name in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    i.add_incoming(ir.Constant(I64, 0), entry)
    lanes = []
    for pointer, operand in zip(inputs, op.operands):
        dtype = operand.type.scalar
        value = b.load(b.gep(pointer, [i], inbounds=True, source_etype=memory_type(dtype)), typ=memory_type(dtype))
        lanes.append(b.trunc(value, I1) if register_type(dtype) == I1 else value)
    result_type = op.results[0].type.scalar
    result = scalar.LOWER[op.opcode](b, op, lanes)
    if register_type(result_type) == I1:
        result = b.zext(result, I8)
    b.store(result, b.gep(out, [i], inbounds=True, source_etype=memory_type(result_type)))
    following = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(following, loop)
    b.cbranch(b.icmp_signed("<", following, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return str(module)


def _compile(op) -> _Loop:
    from . import jit

    return _Loop(jit.LoadedObject(jit.compile_to_object(build(op))), len(op.operands))


def loop_for(op) -> _Loop:
    wanted = key(op)
    found = _loops.get(wanted)
    if found is None:
        with _lock:
            found = _loops.get(wanted)
            if found is None:
                found = _loops[wanted] = _compile(op)
    return found


def evaluate(op, args: Sequence[np.ndarray]) -> np.ndarray:
    """``op`` (an elementwise IR op the lane lowering handles) applied to the arrays ``args``
    (broadcast together); the result has the dtype and the broadcast shape of the arguments."""
    loop = loop_for(op)
    arrays = [np.asarray(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    inputs = [np.ascontiguousarray(np.broadcast_to(a, shape), dtype=operand.type.scalar.numpy)
              for a, operand in zip(arrays, op.operands)]
    out = np.empty(shape, dtype=op.results[0].type.scalar.numpy)

    def run(start: int, stop: int) -> None:
        pointers = [a.ctypes.data + start * a.itemsize for a in inputs]
        loop.call(*pointers, out.ctypes.data + start * out.itemsize, stop - start)

    native_loops.over_two_threads(run, out.size)
    return out


def handles(op) -> Optional[str]:
    """None when ``op`` can be evaluated by a compiled loop here, else why not."""
    from ..llvm import scalar

    if op.opcode not in scalar.LOWER:
        return f"the cpu backend does not lower {op.opcode}"
    if op.opcode == "libdevice":
        from ..llvm import libdevice

        if not libdevice.supports(op.attrs["fn"]):
            return f"the cpu backend does not lower libdevice.{op.attrs['fn']}"
    if any(o.type.scalar.is_ptr() for o in op.operands):
        return "pointer operands"
    return None
