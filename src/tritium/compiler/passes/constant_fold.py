"""Constant folding: an elementwise op whose operands are all constants (or splats of constants)
becomes a constant (or a splat of one).

Why it is correct: the folded value is computed by ``numerics.elementwise``, the same arithmetic
the interpreter executes (i1 modulo 2, integer wrapping, ``x // 0 == -1``, shifts past the width,
NaN-aware min/max, saturating casts), on one-element arrays of the operands' types, and stored as
the Python number whose conversion back to the result type is exact. So the folded kernel gives
bit-identical results. An op that debug mode (``TRITIUM_DEBUG=1``) would stop the kernel at (an
int32 overflow, a division by zero, a float -> int conversion of NaN or an out-of-range value) is
left alone, so that the report still happens; without debug mode it computes what folding would.
Equal constants are merged by CSE.
"""
from __future__ import annotations

import math

import numpy as np

from ...numerics import elementwise
from ..ir import types as T
from ..ir.ops import Function, Operation, Region
from ..ir.spec import OVERFLOW_CHECKED, SPEC, ZERO_DIVISOR_CHECKED, checked_in_debug_mode
from .rewriting import NO_CONSTANT, become, constant_value, new_op

# Every op numerics.elementwise evaluates, but div: Triton's default fp32 division is approximate on a
# GPU (rounding=full), so the quotient is left for the backend to compute.
FOLDABLE = frozenset(elementwise.EVALUATE) - {"div"}

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def as_array(value, scalar: T.dtype) -> np.ndarray:
    """A constant's value as the one-element array the interpreter makes of it."""
    return elementwise.constant_array(value, scalar)


def as_constant(element, scalar: T.dtype):
    """The Python number a constant op of type ``scalar`` holds for the array element ``element``."""
    if scalar.is_bool():
        return bool(element)
    if scalar.is_floating():
        return float(element)  # exact: every fp8/fp16/bf16/fp32 value is an fp64 value
    return int(element)


def _reported_in_debug_mode(op: Operation, values: list) -> bool:
    """True when debug mode would stop the kernel at ``op`` with these operand values (the checks
    ``config.debug_mode`` lists)."""
    if not checked_in_debug_mode(op):
        return False
    traits = SPEC[op.opcode].traits
    if OVERFLOW_CHECKED in traits:
        a = int(values[0])
        exact = -a if op.opcode == "neg" else {"add": a + int(values[1]), "sub": a - int(values[1]),
                                               "mul": a * int(values[1])}[op.opcode]
        return not _INT32_MIN <= exact <= _INT32_MAX
    if ZERO_DIVISOR_CHECKED in traits:
        return int(values[1]) == 0
    if op.opcode == "cast":
        x = float(values[0])
        if math.isnan(x) or math.isinf(x):
            return True
        info = np.iinfo(op.attrs["to"].numpy)
        return not info.min <= math.trunc(x) <= info.max
    return False


def _fold(op: Operation) -> list[Operation]:
    """The ops that replace ``op`` (ending in one with op's result), or [op] when it stays."""
    values = [constant_value(v) for v in op.operands]
    if any(v is NO_CONSTANT for v in values):
        return [op]
    arrays = [as_array(v, operand.type.scalar) for v, operand in zip(values, op.operands)]
    # The interpreter materialises each constant before computing: fold from the same numbers.
    materialised = [a[0].item() if a.dtype.kind in "biu" else float(a[0]) for a in arrays]
    if _reported_in_debug_mode(op, materialised):
        return [op]
    out = elementwise.evaluate(op.opcode, arrays, op.attrs, op.operands[0].type.scalar)
    result = op.result.type
    value = as_constant(np.asarray(out).reshape(-1)[0], result.scalar)
    if not result.is_block():
        become(op, "constant", [], {"value": value})
        return [op]
    constant = new_op("constant", [], result.scalar, {"value": value}, op.loc)
    become(op, "splat", [constant.result])
    return [constant, op]


def _fold_region(region: Region) -> None:
    ops: list[Operation] = []
    for op in region.ops:
        for nested in op.regions:
            _fold_region(nested)
        ops.extend(_fold(op) if op.opcode in FOLDABLE else [op])
    region.ops = ops


def fold_constants(fn: Function) -> None:
    _fold_region(fn.body)
