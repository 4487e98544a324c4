"""Builds IR: an insertion point and the source location stamped onto each new operation."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

from .ops import Location, Operation, Region


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
        op = Operation(opcode, operands, result_types, attrs, regions, self.loc)
        self.region.ops.append(op)
        return op
