"""Builds IR: an insertion point and the source location stamped onto each new operation.

Operands are given in the IR spec's order, or as a mapping from slot names to values (how an
op with optional operands names the ones it has); attributes the spec gives a default are filled
in, so passes and backends can read every attribute of an op.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Mapping, Optional

from .ops import Location, Operation, Region
from .spec import SPEC


def ordered_operands(opcode: str, operands) -> tuple[list, Optional[tuple[str, ...]]]:
    """(values, slot names) for ``operands``, a sequence in spec order or a name -> value mapping
    (None values are absent optional operands)."""
    if not isinstance(operands, Mapping):
        return list(operands), None
    spec = SPEC[opcode]
    values, names = [], []
    for slot in spec.operands:
        value = operands.get(slot.name)
        if value is None:
            continue
        if slot.variadic:
            values.extend(value)
            names.extend([slot.name] * len(value))
        else:
            values.append(value)
            names.append(slot.name)
    unknown = set(operands) - {slot.name for slot in spec.operands}
    assert not unknown, f"{opcode} has no operand slots {sorted(unknown)}"
    return values, tuple(names)


def with_defaults(opcode: str, attrs) -> dict:
    attrs = dict(attrs or {})
    spec = SPEC.get(opcode)
    if spec is not None:
        for attr in spec.attrs:
            if not attr.required and attr.name not in attrs:
                attrs[attr.name] = attr.default
    return attrs


class Builder:
    def __init__(self) -> None:
        self._regions: list[Region] = []
        self.loc: Optional[Location] = None

    @property
    def region(self) -> Region:
        return self._regions[-1]

    @contextmanager
    def insert_into(self, region: Region):
        self._regions.append(region)
        try:
            yield region
        finally:
            self._regions.pop()

    def create(self, opcode: str, operands=(), result_types=(), attrs=None, regions=()) -> Operation:
        values, names = ordered_operands(opcode, operands)
        op = Operation(opcode, values, result_types, with_defaults(opcode, attrs), regions, self.loc, names)
        self.region.ops.append(op)
        return op
