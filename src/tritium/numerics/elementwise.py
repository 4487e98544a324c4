"""The IR's elementwise opcodes evaluated on numpy arrays, with the edge cases the IR spec states.

``evaluate(opcode, args, attrs, scalar)`` computes one op: ``args`` are arrays of the operands'
numpy types (broadcastable against each other), ``attrs`` the op's attributes and ``scalar`` the
element type of the first operand. These are the rules ``compiler/ir/spec.py`` writes out as sentences:

- i1 arithmetic works modulo 2: ``add`` and ``sub`` are xor, ``mul`` is and, ``neg`` is the identity;
- integers wrap; ``x // 0`` is all ones and ``x % 0`` is ``x`` (C's truncating division otherwise);
- a shift by an amount < 0 or >= the bit width (1 for i1) gives 0 (``shr`` of a negative signed
  value: -1);
- ``minimum``/``maximum`` on floats: NaN-ignoring (fmin/fmax) unless ``propagate_nan=all``, and
  -0 < +0; ``clamp`` is the two in a row;
- float ``mod`` is fmod (the sign of the dividend); casts follow ``arithmetic.cast``.

Constant folding computes with these and the interpreter's handlers call them, so each edge case has
one definition and a folded value is bit-identical to executing the op
(tests/compiler/test_passes_folding.py runs both and compares bits). ``constant_array`` is the one
conversion of a constant's value to an array, for both.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from ..compiler.ir import types as T
from . import arithmetic, fp8e4b15


def constant_array(value, scalar: T.dtype) -> np.ndarray:
    """A constant op's value as the one-element array of its type that execution and constant folding
    both compute with. A float is rounded once to the type (ml_dtypes alone would round fp64 to bf16
    and fp8 twice, through fp32); unlike a cast to fp8 it does not saturate: a constant may be inf."""
    if scalar.is_bool():
        return np.array([bool(value)])
    if scalar.is_fp8e4b15():
        return fp8e4b15.constant_code(value)
    if scalar.is_floating():
        with np.errstate(all="ignore"):
            return arithmetic.narrow_float(np.array([float(value)]), scalar.numpy)
    return np.array([value]).astype(scalar.numpy)


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


# div.approx.f32 computes x * (1 / y): the reciprocal of |y| > 2**126 underflows to zero on a GPU.
APPROX_DIVISOR_LIMIT = 2.0**126


def divide_approx(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp32 ``a / b`` as div.approx.f32 is documented (PTX ISA): the correctly rounded quotient for
    ``|b| <= 2**126`` (the instruction is within 2 ulp of it there); beyond, ``a`` times a zero of
    ``b``'s sign (NaN for an infinite or NaN ``a``)."""
    with np.errstate(all="ignore"):
        big = np.abs(b) > np.float32(APPROX_DIVISOR_LIMIT)
        zero = np.where(np.signbit(b), np.float32(-0.0), np.float32(0.0)).astype(np.float32)
        return np.where(big, a * zero, np.divide(a, b)).astype(np.float32)


def remainder(a: np.ndarray, b: np.ndarray, floating: bool) -> np.ndarray:
    return np.fmod(a, b) if floating else arithmetic.int_mod(a, b)


def bit_width(dtype: np.dtype) -> int:
    """The bit width of an integer array's IR type: 1 for i1 (stored as numpy bools, one byte each)."""
    return 1 if dtype == np.bool_ else dtype.itemsize * 8


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a << b``; an amount < 0 or >= the bit width gives 0 (LLVM's poison, defined here)."""
    too_far = (b < 0) | (b >= bit_width(a.dtype))
    safe = np.where(too_far, 0, b).astype(a.dtype)
    return np.where(too_far, 0, np.left_shift(a, safe)).astype(a.dtype)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Arithmetic for signed types, logical for unsigned; past the width, the sign fill."""
    too_far = (b < 0) | (b >= bit_width(a.dtype))
    safe = np.where(too_far, 0, b).astype(a.dtype)
    fill = np.where(a < 0, -1, 0) if np.issubdtype(a.dtype, np.signedinteger) else 0
    return np.where(too_far, fill, np.right_shift(a, safe)).astype(a.dtype)


_PREDICATES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
               "ne": np.not_equal}


def compare(a: np.ndarray, b: np.ndarray, predicate: str) -> np.ndarray:
    """numpy's comparisons are C's: ordered, except ``ne`` (true when either is NaN)."""
    return _PREDICATES[predicate](a, b)


def _nan_rule(maximum: bool, floating: bool, propagate_nan: str):
    """numpy's max/min with the op's NaN rule (fmax/fmin ignore a NaN); signed zeros left to the caller."""
    if floating and propagate_nan == "none":
        return np.fmax if maximum else np.fmin
    return np.maximum if maximum else np.minimum


def extremum(a: np.ndarray, b: np.ndarray, maximum: bool, floating: bool, propagate_nan: str = "none") -> np.ndarray:
    """``maximum``/``minimum`` (and each step of a max/min reduction): NaN-ignoring for floats unless
    ``propagate_nan`` is ``"all"``, and -0 < +0."""
    result = _nan_rule(maximum, floating, propagate_nan)(a, b)
    if floating:
        # numpy returns either zero when both are zeros; IEEE 754-2019 orders them (-0 < +0):
        # max(+0, -0) = +0, min(+0, -0) = -0. Only a zero result can need the fix, and testing the
        # result alone keeps the common case (no zeros) to one comparison.
        zero = result == 0
        if zero.any():
            both_zero = zero & (a == 0) & (b == 0)
            signed = a + b if maximum else -((-a) + (-b))  # +0 + -0 = +0 under round-to-nearest
            result = np.where(both_zero, signed, result)
    return result


def clamp(x: np.ndarray, low: np.ndarray, high: np.ndarray, floating: bool, propagate_nan: str = "none") -> np.ndarray:
    """``clamp``: ``minimum(maximum(x, low), high)``, each step an ``extremum``."""
    return extremum(extremum(x, low, True, floating, propagate_nan), high, False, floating, propagate_nan)


def reduce_extremum(x: np.ndarray, axis: int, maximum: bool, floating: bool) -> np.ndarray:
    """A max/min reduction along ``axis`` in the tree order (``arithmetic.tree_reduce``), each step an
    ``extremum`` with propagate_nan=none. Ordering the signed zeros can only change a zero result,
    and which zero wins does not depend on the order of the steps; so the tree runs on numpy's
    fmax/fmin alone, and only where that gives a zero is it run again with the zeros ordered."""
    fast = _nan_rule(maximum, floating, "none")
    result = arithmetic.tree_reduce([x], axis, lambda left, right: [fast(left[0], right[0])])[0]
    if floating and (result == 0).any():
        result = arithmetic.tree_reduce(
            [x], axis, lambda left, right: [extremum(left[0], right[0], maximum, True)])[0]
    return result


def negate(x: np.ndarray) -> np.ndarray:
    return x if _is_bool(x) else np.negative(x)  # i1: 0 - x == x (mod 2)


def select(condition: np.ndarray, true_value: np.ndarray, false_value: np.ndarray) -> np.ndarray:
    return np.where(condition, true_value, false_value)


# The ops whose result depends on their operands alone, by arity: the interpreter registers these
# functions as its handlers, and ``EVALUATE`` wraps them for constant folding.
BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": add, "sub": subtract, "mul": multiply, "div": divide, "floordiv": arithmetic.int_floordiv,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor, "shl": shift_left, "shr": shift_right,
}
UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {"neg": negate, "not": np.invert, "abs": np.abs}


def _binary(fn) -> Callable:
    return lambda args, attrs, scalar: fn(args[0], args[1])


def _unary(fn) -> Callable:
    return lambda args, attrs, scalar: fn(args[0])


EVALUATE: dict[str, Callable[[list, Mapping, T.dtype], np.ndarray]] = {
    **{opcode: _binary(fn) for opcode, fn in BINARY.items()},
    **{opcode: _unary(fn) for opcode, fn in UNARY.items()},
    "div": lambda args, attrs, scalar: (divide_approx if attrs.get("rounding") == "approx" else divide)(*args),
    "mod": lambda args, attrs, scalar: remainder(args[0], args[1], scalar.is_floating()),
    "cmp": lambda args, attrs, scalar: compare(args[0], args[1], attrs["predicate"]),
    "minimum": lambda args, attrs, scalar: extremum(args[0], args[1], False, scalar.is_floating(),
                                                    attrs.get("propagate_nan", "none")),
    "maximum": lambda args, attrs, scalar: extremum(args[0], args[1], True, scalar.is_floating(),
                                                    attrs.get("propagate_nan", "none")),
    "clamp": lambda args, attrs, scalar: clamp(args[0], args[1], args[2], scalar.is_floating(),
                                               attrs.get("propagate_nan", "none")),
    "select": lambda args, attrs, scalar: select(args[0], args[1], args[2]),
    "cast": lambda args, attrs, scalar: arithmetic.cast(args[0], scalar, attrs["to"], attrs.get("rounding")),
}


def evaluate(opcode: str, args: list[np.ndarray], attrs: Mapping, scalar: T.dtype) -> np.ndarray:
    """The result of the elementwise op ``opcode`` on ``args`` (floating-point warnings silenced:
    NaN and infinities are values here, not errors)."""
    with np.errstate(all="ignore"):
        return EVALUATE[opcode](args, attrs, scalar)
