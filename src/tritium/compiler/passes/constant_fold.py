"""Constant folding: casts of constants become constants, and equal constants are shared.

Folding evaluates with the interpreter's numerics (the executable definition of each op), so a
folded value is bit-identical to what executing the cast would give.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import Function, Operation, Region


def _replace_uses(region: Region, old_id: int, new_value) -> None:
    for op in region.ops:
        op.operands = [new_value if v.id == old_id else v for v in op.operands]
        for nested in op.regions:
            _replace_uses(nested, old_id, new_value)


def _fold_cast(op: Operation, value):
    from ...backends.interpreter import numerics

    src = op.operands[0].type
    dst = op.attrs["to"]
    array = np.array([value]).astype(src.numpy)
    out = numerics.cast(array, src, dst, op.attrs.get("rounding"))[0]
    if dst.is_bool():
        return bool(out)
    if dst.is_floating():
        return float(out)
    return int(out)


def fold_constants(fn: Function) -> None:
    replacements = []

    def visit(region: Region, known: dict) -> None:
        seen: dict = dict(known)
        for op in region.ops:
            if op.opcode == "cast" and not op.results[0].type.is_block():
                source = op.operands[0].owner
                if source is not None and source.opcode == "constant":
                    op.attrs = {"value": _fold_cast(op, source.attrs["value"])}
                    op.opcode = "constant"
                    op.operands = []
            if op.opcode == "constant":
                value = op.attrs["value"]
                key = (op.result.type, type(value), value if value == value else "nan")
                if key in seen:
                    replacements.append((op.result.id, seen[key]))
                else:
                    seen[key] = op.result
            for nested in op.regions:
                visit(nested, seen)

    visit(fn.body, {})
    for old_id, new_value in replacements:
        _replace_uses(fn.body, old_id, new_value)
