"""Canonicalization: algebraic identities that hold bit for bit replace an op by one of its
operands or by a simpler op (``x * 1 -> x``, ``not not x -> x``, ``broadcast(splat s) -> splat s``).

Why it is correct: every rule below gives, for every input, exactly the bits the op gives under
the IR spec's semantics, NaNs and signed zeros included. That is why some familiar rules are
missing: ``x + 0.0`` is not ``x`` for floats (``-0.0 + 0.0 == +0.0``) but ``x + (-0.0)`` and
``x - 0.0`` are; ``x * 0`` is ``0`` only for integers (``nan * 0``, ``-1.0 * 0``); ``x / 1.0``
is exact only for correctly rounded division (``rounding=rn``). Dropping an op is safe because
every op rewritten here is pure: it reads and writes no memory and never traps.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from ..ir.ops import Function, Operation, Region, Value
from ..ir.spec import checked_in_debug_mode
from .rewriting import NO_CONSTANT, Replacements, become, constant_value, defining_op


def _is_integer(value: Value) -> bool:
    scalar = value.type.scalar
    return not scalar.is_ptr() and scalar.is_int()


def _is_float(value: Value) -> bool:
    scalar = value.type.scalar
    return not scalar.is_ptr() and scalar.is_floating()


def _all_ones(value: Value) -> int | bool:
    scalar = value.type.scalar
    if scalar.is_bool():
        return True
    return (1 << scalar.int_bitwidth) - 1 if scalar.is_int_unsigned() else -1


def _is(value: Value, number) -> bool:
    """``value`` is a constant (or splat of one) equal to ``number``, of the same kind of number
    (False and True count as the integers 0 and 1; a float zero must have ``number``'s sign)."""
    constant = constant_value(value)
    if constant is NO_CONSTANT or isinstance(constant, float) != isinstance(number, float):
        return False
    if isinstance(number, float) and number == 0.0:
        return constant == 0.0 and math.copysign(1.0, constant) == math.copysign(1.0, number)
    return constant == number


def _lhs_rhs(op: Operation) -> tuple[Value, Value]:
    return op.operands[0], op.operands[1]


# Each rule returns the value that replaces the op's result, or None; it may also rewrite the op
# in place (and return None).
def _add(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    if _is_integer(lhs):
        return lhs if _is(rhs, 0) else rhs if _is(lhs, 0) else None
    if _is_float(lhs):  # x + (-0.0) == x for every x, +0.0 and -0.0 included; x + 0.0 is not
        return lhs if _is(rhs, -0.0) else rhs if _is(lhs, -0.0) else None
    return None


def _sub(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    if _is_integer(lhs) and _is(rhs, 0):
        return lhs
    if _is_float(lhs) and _is(rhs, 0.0):  # -0.0 - 0.0 == -0.0
        return lhs
    return None


def _mul(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    if _is_integer(lhs):
        for x, other in ((lhs, rhs), (rhs, lhs)):
            if _is(other, 1):
                return x
            if _is(other, 0):
                return other
        return None
    if _is_float(lhs):  # x * 1.0 keeps every x's bits, signed zeros and NaNs included
        return lhs if _is(rhs, 1.0) else rhs if _is(lhs, 1.0) else None
    return None


def _div(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    if _is_float(lhs) and op.attrs.get("rounding", "rn") == "rn" and _is(rhs, 1.0):
        return lhs
    return None


def _floordiv(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    return lhs if _is_integer(lhs) and _is(rhs, 1) else None


def _bitwise(identity_is_all_ones: bool, absorbing: bool):
    """A rule for ``and``/``or``/``xor`` on integers: ``x op identity`` is x; ``x op absorbing`` is
    the absorbing constant (and: identity all ones, absorbing 0; or: the reverse; xor: none)."""
    def rule(op: Operation) -> Optional[Value]:
        lhs, rhs = _lhs_rhs(op)
        if not _is_integer(lhs):
            return None
        for x, other in ((lhs, rhs), (rhs, lhs)):
            ones = _is(other, _all_ones(x))
            zero = _is(other, 0)
            if ones if identity_is_all_ones else zero:
                return x
            if absorbing and (zero if identity_is_all_ones else ones):
                return other
        return None

    return rule


_and = _bitwise(identity_is_all_ones=True, absorbing=True)
_or = _bitwise(identity_is_all_ones=False, absorbing=True)
_xor = _bitwise(identity_is_all_ones=False, absorbing=False)


def _shift(op: Operation) -> Optional[Value]:
    lhs, rhs = _lhs_rhs(op)
    return lhs if _is(rhs, 0) else None


def _involution(op: Operation) -> Optional[Value]:
    """not(not x) and neg(neg x) are x (integers wrap both ways; a float's sign bit flips twice).
    Not for an int32 neg, which debug mode checks for overflow (neg INT_MIN) when it runs."""
    if checked_in_debug_mode(op):
        return None
    inner = defining_op(op.operands[0], op.opcode)
    return inner.operands[0] if inner is not None else None


def _same_type(op: Operation) -> Optional[Value]:
    """A cast, bitcast or broadcast to the operand's own type is the operand."""
    source = op.operands[0]
    return source if source.type == op.result.type else None


def _broadcast(op: Operation) -> Optional[Value]:
    source = op.operands[0]
    if source.type == op.result.type:
        return source
    splat = defining_op(source, "splat")
    if splat is not None:  # every lane of the splat holds one scalar: so does its broadcast
        become(op, "splat", [splat.operands[0]])
    elif not source.type.is_block():
        become(op, "splat", [source])
    return None


def _reshape(op: Operation) -> Optional[Value]:
    inner = defining_op(op.operands[0], "reshape")
    if inner is not None:  # row-major order is kept by each reshape, so by the pair
        op.operands = [inner.operands[0]]
    return _same_type(op)


def _permute(op: Operation) -> Optional[Value]:
    order = tuple(op.attrs["order"])
    return op.operands[0] if order == tuple(range(len(order))) else None


def _select(op: Operation) -> Optional[Value]:
    condition, true_value, false_value = op.operands
    if true_value is false_value:  # both sides are evaluated anyway, and neither traps
        return true_value
    if _is(condition, True):
        return true_value
    if _is(condition, False):
        return false_value
    return None


def _addptr(op: Operation) -> Optional[Value]:
    pointer, offset = op.operands
    return pointer if _is(offset, 0) else None


RULES: dict[str, Callable[[Operation], Optional[Value]]] = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "floordiv": _floordiv, "and": _and, "or": _or,
    "xor": _xor, "shl": _shift, "shr": _shift, "not": _involution, "neg": _involution, "cast": _same_type,
    "bitcast": _same_type, "broadcast": _broadcast, "reshape": _reshape, "permute": _permute,
    "select": _select, "addptr": _addptr,
}


def _canonicalize_region(region: Region, replacements: Replacements) -> None:
    kept: list[Operation] = []
    for op in region.ops:
        replacements.apply(op)
        for nested in op.regions:
            _canonicalize_region(nested, replacements)
        rule = RULES.get(op.opcode)
        replacement = rule(op) if rule is not None else None
        if replacement is None:
            kept.append(op)
        else:
            replacements.replace(op.result, replacement)
    region.ops = kept


def canonicalize(fn: Function) -> None:
    _canonicalize_region(fn.body, Replacements())
