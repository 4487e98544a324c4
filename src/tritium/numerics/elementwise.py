"""The IR's elementwise opcodes evaluated on numpy arrays, with the edge cases the IR spec states.

``evaluate(opcode, args, attrs, scalar)`` computes one op: ``args`` are arrays of the operands'
numpy types (broadcastable against each other), ``attrs`` the op's attributes and ``scalar`` the
element type of the first operand. These are the rules ``compiler/ir/spec.py`` writes out as sentences:

- i1 arithmetic works modulo 2: ``add`` and ``sub`` are xor, ``mul`` is and, ``neg`` is the identity;
- integers wrap; ``x // 0`` is all ones and ``x % 0`` is ``x`` (C's truncating division otherwise);
- a shift by an amount < 0 or >= the bit width gives 0 (``shr`` of a negative signed value: -1);
- ``minimum``/``maximum`` on floats: NaN-ignoring (fmin/fmax) unless ``propagate_nan=all``, and
  -0 < +0;
- float ``mod`` is fmod (the sign of the dividend); casts follow ``arithmetic.cast``.

Constant folding computes with these, so a folded value is bit-identical to executing the op; the
interpreter's handlers compute the same (tests/compiler/test_passes.py runs both and compares bits).
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from ..compiler.ir import types as T
from . import arithmetic


def _is_bool(x: np.ndarray) -> bool:
    return x.dtype == np.bool_


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_xor(a, b) if _is_bool(a) else np.add(a, b)


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_xor(a, b) if _is_bool(a) else np.subtract(a, b)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.multiply(a, b)  # numpy's bool * is and: the product modulo 2


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE division, rounded once to the operands' type (narrow floats go through fp64, exactly)."""
    if a.dtype in (np.float32, np.float64):
        return np.divide(a, b)
    return (a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)


def remainder(a: np.ndarray, b: np.ndarray, floating: bool) -> np.ndarray:
    return np.fmod(a, b) if floating else arithmetic.int_mod(a, b)


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    too_far = (b < 0) | (b >= bits)
    safe = np.where(too_far, 0, b).astype(a.dtype)
    return np.where(too_far, 0, np.left_shift(a, safe)).astype(a.dtype)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Arithmetic for signed types, logical for unsigned; past the width, the sign fill."""
    bits = a.dtype.itemsize * 8
    too_far = (b < 0) | (b >= bits)
    safe = np.where(too_far, 0, b).astype(a.dtype)
    fill = np.where(a < 0, -1, 0) if np.issubdtype(a.dtype, np.signedinteger) else 0
    return np.where(too_far, fill, np.right_shift(a, safe)).astype(a.dtype)


_PREDICATES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
               "ne": np.not_equal}


def compare(a: np.ndarray, b: np.ndarray, predicate: str) -> np.ndarray:
    """numpy's comparisons are C's: ordered, except ``ne`` (true when either is NaN)."""
    return _PREDICATES[predicate](a, b)


def extremum(a: np.ndarray, b: np.ndarray, maximum: bool, floating: bool, propagate_nan: str) -> np.ndarray:
    if floating and propagate_nan == "none":
        fn = np.fmax if maximum else np.fmin
    else:
        fn = np.maximum if maximum else np.minimum
    result = fn(a, b)
    if floating:
        # Signed zeros as IEEE 754-2019 orders them (-0 < +0): max(+0, -0) = +0, min(+0, -0) = -0.
        both_zero = (a == 0) & (b == 0)
        if both_zero.any():
            signed = a + b if maximum else -((-a) + (-b))
            result = np.where(both_zero, signed, result)
    return result


def negate(x: np.ndarray) -> np.ndarray:
    return x if _is_bool(x) else np.negative(x)  # i1: 0 - x == x (mod 2)


def select(condition: np.ndarray, true_value: np.ndarray, false_value: np.ndarray) -> np.ndarray:
    return np.where(condition, true_value, false_value)


def _binary(fn) -> Callable:
    return lambda args, attrs, scalar: fn(args[0], args[1])


EVALUATE: dict[str, Callable[[list, Mapping, T.dtype], np.ndarray]] = {
    "add": _binary(add),
    "sub": _binary(subtract),
    "mul": _binary(multiply),
    "div": _binary(divide),
    "floordiv": _binary(arithmetic.int_floordiv),
    "mod": lambda args, attrs, scalar: remainder(args[0], args[1], scalar.is_floating()),
    "and": _binary(np.bitwise_and),
    "or": _binary(np.bitwise_or),
    "xor": _binary(np.bitwise_xor),
    "shl": _binary(shift_left),
    "shr": _binary(shift_right),
    "cmp": lambda args, attrs, scalar: compare(args[0], args[1], attrs["predicate"]),
    "minimum": lambda args, attrs, scalar: extremum(args[0], args[1], False, scalar.is_floating(),
                                                    attrs.get("propagate_nan", "none")),
    "maximum": lambda args, attrs, scalar: extremum(args[0], args[1], True, scalar.is_floating(),
                                                    attrs.get("propagate_nan", "none")),
    "neg": lambda args, attrs, scalar: negate(args[0]),
    "not": lambda args, attrs, scalar: np.invert(args[0]),
    "abs": lambda args, attrs, scalar: np.abs(args[0]),
    "select": lambda args, attrs, scalar: select(args[0], args[1], args[2]),
    "cast": lambda args, attrs, scalar: arithmetic.cast(args[0], scalar, attrs["to"], attrs.get("rounding")),
}


def evaluate(opcode: str, args: list[np.ndarray], attrs: Mapping, scalar: T.dtype) -> np.ndarray:
    """The result of the elementwise op ``opcode`` on ``args`` (floating-point warnings silenced:
    NaN and infinities are values here, not errors)."""
    with np.errstate(all="ignore"):
        return EVALUATE[opcode](args, attrs, scalar)
