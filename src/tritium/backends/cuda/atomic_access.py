"""``atomic_load`` and ``atomic_store`` on the GPU, as the PTX Triton emits for them.

Each element is one ``ld.<sem>.<scope>.global.b<bits>`` (``st.<sem>.<scope>...`` for stores) in the
thread that owns it: ``sem`` acquire/release or relaxed, ``scope`` gpu, cta or sys, the element's
bits in a register of its width (8-bit elements in a 16-bit one, as PTX allows). The instruction
is inline assembly with side effects, so LLVM neither merges it nor moves it out of a loop; a
load's value reaches every thread that holds the element through ``Memory._atomic``.
"""
from __future__ import annotations

from llvmlite import ir


from ...compiler.ir.ops import Operation
from ..llvm.types import register_type
from . import layouts as L
from .values import _is_block, _shape

# PTX register constraint and LLVM integer type for an element of each width
_REGISTER = {8: ("h", ir.IntType(16)), 16: ("h", ir.IntType(16)), 32: ("r", ir.IntType(32)), 64: ("l", ir.IntType(64))}


def ptx_access(kind: str, sem: str, scope: str, bits: int) -> str:
    """``ld.acquire.gpu.global.b32``, ``st.relaxed.sys.global.b16``, ... (``kind`` ld or st)."""
    return f"{kind}.{sem}.{scope}.global.b{bits}"


class AtomicAccess:
    """The CUDA code generator's rules for atomic loads and stores (a mixin of ``Codegen``)."""

    def _bits_of(self, value: ir.Value, dtype) -> ir.Value:
        """An element's register value as the integer the access moves."""
        bits = dtype.primitive_bitwidth
        _, int_ty = _REGISTER[bits]
        if value.type != ir.IntType(bits):
            value = self.b.bitcast(value, ir.IntType(bits))
        return self.b.zext(value, int_ty) if bits == 8 else value

    def _from_bits(self, value: ir.Value, dtype) -> ir.Value:
        bits = dtype.primitive_bitwidth
        if bits == 8:
            value = self.b.trunc(value, ir.IntType(8))
        reg = register_type(dtype)
        return value if value.type == reg else self.b.bitcast(value, reg)

    def lower_atomic_load(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        bits = dtype.primitive_bitwidth
        constraint, int_ty = _REGISTER[bits]
        text = f"{ptx_access('ld', op.attrs.get('sem', 'acquire'), op.attrs.get('scope', 'gpu'), bits)} $0, [$1];"

        def apply(address, operand):
            p = self.global_pointer(address)
            loaded = self.b.asm(ir.FunctionType(int_ty, [p.type]), text, f"={constraint},l,~{{memory}}", [p],
                                side_effect=True)
            return self._from_bits(loaded, dtype)

        self._atomic(op, apply)

    def lower_atomic_store(self, op: Operation) -> None:
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        bits = dtype.primitive_bitwidth
        constraint, int_ty = _REGISTER[bits]
        text = f"{ptx_access('st', op.attrs.get('sem', 'release'), op.attrs.get('scope', 'gpu'), bits)} [$0], $1;"

        def store(address, element):
            p = self.global_pointer(address)
            self.b.asm(ir.FunctionType(ir.VoidType(), [p.type, int_ty]), text, f"l,{constraint},~{{memory}}",
                       [p, self._bits_of(element, dtype)], side_effect=True)

        if not _is_block(pointer):
            predicate = self._and(self.first_thread(), self.scalar(mask) if mask is not None else None)
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(ir.IntType(32), 0), predicate)
            self._guarded(predicate, lambda: store(self.scalar(pointer), self.scalar(value)))
            return
        layout = L.blocked(_shape(pointer.type), self.num_warps, None, 1)
        pointers = self.regs(pointer, layout)
        values = self.regs(value, layout) if _is_block(value) else [self.scalar(value)] * layout.num_regs
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        for r in range(layout.num_regs):
            predicate = self._and(owner, masks[r] if masks is not None else None)
            predicate = self.checked(pointer, pointers[r], self.lane_number(layout, r), predicate)
            self._guarded(predicate, lambda r=r: store(pointers[r], values[r]))



