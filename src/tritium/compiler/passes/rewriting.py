"""What the passes share: following replaced values, reading constants through splats, and
building or reshaping operations in place.

Passes walk a function once, in program order. In structured SSA a value is defined before every
use, in the same region or an enclosing one, so a pass that records "the uses of A now read B"
in a ``Replacements`` and applies it to each operation's operands as the walk reaches them has
rewritten every use by the end of the walk.
"""
from __future__ import annotations

from typing import Iterator, Optional

from ..ir.builder import with_defaults
from ..ir.ops import Operation, Region, Value
from ..ir.spec import REPEATS, SPEC, opcodes_with

_REPEATING = opcodes_with(REPEATS)  # ops that repeat their operand: a constant repeated is that constant


class Replacements:
    """Value id -> the value that takes its place (chains are followed: A -> B -> C reads C)."""

    def __init__(self) -> None:
        self._by_id: dict[int, Value] = {}

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def replace(self, old: Value, new: Value) -> None:
        assert old.type == new.type, f"replacing {old.type} by {new.type}"
        assert old is not new
        self._by_id[old.id] = new

    def resolve(self, value: Value) -> Value:
        while value.id in self._by_id:
            value = self._by_id[value.id]
        return value

    def apply(self, op: Operation) -> None:
        """Points ``op``'s operands at the values that replaced them."""
        if self._by_id:
            op.operands = [self.resolve(v) for v in op.operands]


def values_read(op: Operation) -> Iterator[Value]:
    """Every value ``op`` reads, including those read by the ops nested in its regions."""
    yield from op.operands
    for region in op.regions:
        for inner in region.ops:
            yield from values_read(inner)


def used_ids(region: Region) -> set[int]:
    """The ids of the values some op of ``region`` (at any depth) reads."""
    return {v.id for op in region.ops for v in values_read(op)}


def defining_op(value: Value, opcode: Optional[str] = None) -> Optional[Operation]:
    """The op whose result ``value`` is (None for a region argument), when its opcode is ``opcode``."""
    owner = value.owner
    if owner is None or (opcode is not None and owner.opcode != opcode):
        return None
    return owner


# What ``constant_value`` gives for a value that is not a constant (0 and False are values of constants).
NO_CONSTANT = object()


def constant_value(value: Value):
    """The scalar every lane of ``value`` holds when it is a constant, or a splat or broadcast of
    one; ``NO_CONSTANT`` otherwise."""
    owner = value.owner
    while owner is not None and owner.opcode in _REPEATING:
        owner = owner.operands[0].owner
    if owner is None or owner.opcode != "constant":
        return NO_CONSTANT
    return owner.attrs["value"]


def new_op(opcode: str, operands, result_type, attrs=None, loc=None) -> Operation:
    """A new one-result operation, its attributes completed with the spec's defaults."""
    return Operation(opcode, operands, [result_type], with_defaults(opcode, attrs), (), loc)


def become(op: Operation, opcode: str, operands, attrs=None) -> None:
    """Turns ``op`` into another op with the same results (its uses need no rewriting)."""
    op.opcode = opcode
    op.operands = list(operands)
    op.operand_names = SPEC[opcode].operand_names(len(op.operands))
    op.attrs = with_defaults(opcode, attrs)
    op.regions = []


def expand_ops(fn, opcodes, lower, builder) -> bool:
    """Replaces every op of ``fn`` whose opcode is in ``opcodes`` by the ops ``lower(op)`` creates
    through ``builder`` (inserted where the op was, at its source location); ``lower`` returns the
    values that take the place of the op's results, in order (none for an op without results).
    Walks in program order, so later uses (nested ones included) read the new values. Returns
    whether anything changed."""
    from ..ir.ops import Region

    replacements = Replacements()

    def walk(region) -> bool:
        changed = False
        rewritten: list[Operation] = []
        for op in region.ops:
            replacements.apply(op)
            for nested in op.regions:
                changed |= walk(nested)
            if op.opcode not in opcodes:
                rewritten.append(op)
                continue
            scratch = Region()
            builder.loc = op.loc
            with builder.insert_into(scratch):
                for old, new in zip(op.results, lower(op)):
                    replacements.replace(old, new)
            rewritten.extend(scratch.ops)
            changed = True
        region.ops = rewritten
        return changed

    return walk(fn.body)
