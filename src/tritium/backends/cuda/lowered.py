"""An i32 value in LLVM IR that Python's ``+ * & >> << | ^`` emit code on: index arithmetic written once
as plain Python (``mma.py``'s operand offsets and ldmatrix addresses, ``wgmma.py``'s descriptors) runs on
ints in the models of the tests and on these values in the code generator.
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import I32
from . import layouts as L


class Lowered:
    """An i32 value in LLVM IR: Python's ``+ * & >> |`` on it (with ints or other Lowered values)
    emit the instruction, so the index functions give ints on ints and code on these. A value
    marked ``late`` (one that changes inside a loop) keeps the results in its builder; the others
    (lane and warp arithmetic) are built in the entry block."""

    __slots__ = ("b", "late", "value")

    def __init__(self, b: ir.IRBuilder, value, late: bool = False):
        self.b, self.value, self.late = b, value, late

    def _binary(self, other, emit):
        if isinstance(other, Lowered):
            b = self.b if self.late or not other.late else other.b
            return Lowered(b, emit(b, self.value, other.value), self.late or other.late)
        return Lowered(self.b, emit(self.b, self.value, ir.Constant(I32, other)), self.late)

    def __add__(self, other):
        if isinstance(other, int) and other == 0:
            return self
        return self._binary(other, lambda b, x, y: b.add(x, y))

    __radd__ = __add__

    def __mul__(self, other):
        if isinstance(other, int):
            if other == 0:
                return 0
            if other == 1:
                return self
            if other & (other - 1) == 0:
                return self << L.log2(other)
        return self._binary(other, lambda b, x, y: b.mul(x, y))

    __rmul__ = __mul__

    def __lshift__(self, shift: int):
        return self if shift == 0 else self._binary(shift, lambda b, x, y: b.shl(x, y))

    def __rshift__(self, shift: int):
        return self if shift == 0 else self._binary(shift, lambda b, x, y: b.lshr(x, y))

    def __and__(self, mask):
        if isinstance(mask, int) and mask == 0:
            return 0
        return self._binary(mask, lambda b, x, y: b.and_(x, y))

    __rand__ = __and__

    def __or__(self, other):
        if isinstance(other, int) and other == 0:
            return self
        return self._binary(other, lambda b, x, y: b.or_(x, y))

    __ror__ = __or__

    def __xor__(self, other):
        if isinstance(other, int) and other == 0:
            return self
        return self._binary(other, lambda b, x, y: b.xor(x, y))

    __rxor__ = __xor__


def as_ir(value) -> ir.Value:
    return value.value if isinstance(value, Lowered) else ir.Constant(I32, value)
