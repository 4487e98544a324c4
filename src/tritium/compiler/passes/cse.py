"""Common-subexpression elimination: a pure op without regions that repeats an earlier one (same
opcode, operands, attributes and result types) is dropped and its uses read the earlier results.

Why it is correct: a pure op's results depend on its operands and attributes alone (it reads no
memory and has no effect), so two such ops compute the same values. The earlier op must also be
available wherever the later one's results are used: ops are remembered per region, and a nested
region starts from what its enclosing regions had defined before it, so a value from an enclosing
region may replace one in a nested region but never the reverse, and the two sides of an ``if``
(or the two regions of a ``while``) never share. Float constants are compared by their bits, so
``0.0`` and ``-0.0`` stay apart.
"""
from __future__ import annotations

import struct
from collections import ChainMap
from typing import Hashable, Optional

from ..ir.ops import Function, Operation, Region
from ..ir.spec import COMMUTATIVE, SPEC, is_pure
from .rewriting import Replacements


def _attr_key(value) -> Hashable:
    # bool is an int and 1.0 == 1 in Python: the kind of number is part of the key, and a float is
    # its bit pattern (equal for NaNs written alike, different for 0.0 and -0.0).
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_attr_key(v) for v in value))
    return (type(value).__name__, value)


def _reorderable(op: Operation) -> bool:
    """Commutative ops on integers, where ``a op b`` and ``b op a`` agree bit for bit (for floats
    the NaN that propagates may depend on the order)."""
    spec = SPEC[op.opcode]
    scalar = op.result.type.scalar if len(op.results) == 1 else None
    return COMMUTATIVE in spec.traits and scalar is not None and not scalar.is_ptr() and scalar.is_int()


def _key(op: Operation) -> Optional[Hashable]:
    if op.regions or not op.results or not is_pure(op):
        return None
    operands = tuple(v.id for v in op.operands)
    if _reorderable(op):
        operands = tuple(sorted(operands))
    attrs = tuple(sorted((name, _attr_key(value)) for name, value in op.attrs.items()))
    return (op.opcode, operands, attrs, tuple(r.type for r in op.results))


def _eliminate_in_region(region: Region, available: ChainMap, replacements: Replacements) -> None:
    kept: list[Operation] = []
    for op in region.ops:
        replacements.apply(op)
        for nested in op.regions:
            _eliminate_in_region(nested, available.new_child(), replacements)
        key = _key(op)
        earlier = available.get(key) if key is not None else None
        if earlier is None:
            if key is not None:
                available[key] = op
            kept.append(op)
            continue
        for old, new in zip(op.results, earlier.results):
            replacements.replace(old, new)
    region.ops = kept


def eliminate_common_subexpressions(fn: Function) -> None:
    _eliminate_in_region(fn.body, ChainMap(), Replacements())
