"""Global memory: loads and stores as vector accesses where the axis analysis proves a thread's
elements contiguous and aligned, masked ones as predicated PTX instructions (as Triton emits them),
the cache hints of ``cache_modifier`` and ``eviction_policy``, and atomics.
"""
from __future__ import annotations

from typing import ClassVar, Optional

from llvmlite import ir

from ...compiler.ir.ops import Operation, Value
from ..llvm import atomics
from ..llvm.lowering import UnsupportedOp
from ..llvm.types import I1, I8, I32, I64, VOID, constant, item_size, memory_type, register_type
from . import layouts as L
from .values import GLOBAL_PTR, LOAD_CACHE_OPERATORS, STORE_CACHE_OPERATORS, _is_block, _shape, _words, cache_hints


class Memory:
    """Loads, stores and atomics on global memory."""

    def global_pointer(self, p: ir.Value) -> ir.Value:
        return self.b.addrspacecast(p, GLOBAL_PTR)

    def _vector_groups(self, layout: L.Layout):
        """Runs of registers that are consecutive along the fastest dimension (the layout's first
        register bits): (first register, length)."""
        if not layout.reg_bits:
            return [(0, 1)]
        fast = layout.reg_bits[0][0]
        vec = 1
        for dim, weight in layout.reg_bits:
            if dim == fast and weight == vec:
                vec *= 2
            else:
                break
        return [(r, vec) for r in range(0, layout.num_regs, vec)]

    def _predicated_load(self, predicate: Optional[ir.Value], p: ir.Value, ty, fallback: Optional[ir.Value],
                         hints: str = "") -> Optional[ir.Value]:
        """``ty`` (4, 8 or 16 bytes of numbers) read from ``p`` where ``predicate`` holds, else
        ``fallback``, as one predicated PTX load (``@p ld.global.v4.b32``), which is what Triton emits:
        no branch around the load, at which a warp's threads (whose masks differ) could part.
        ``hints``: the cache operator or eviction priority qualifiers (``.cg``, ``.L1::evict_last``);
        with no predicate the load is unconditional. None for other sizes (the caller branches)."""
        words = _words(ty)
        if not words:
            return None
        b = self.b
        target = "$0" if words == 1 else "{" + ", ".join(f"${i}" for i in range(words)) + "}"
        vector = f".v{words}" if words > 1 else ""
        returned = I32 if words == 1 else ir.LiteralStructType([I32] * words)
        if predicate is None:
            args = [b.ptrtoint(p, I64)]
            text = f"ld.global{hints}{vector}.b32 {target}, [${words}];"
            constraints = ["=r"] * words + ["l"]
        else:
            args = [predicate, b.ptrtoint(p, I64)] + self._as_words(fallback, words)
            text = " ".join(f"mov.b32 ${i}, ${words + 2 + i};" for i in range(words))
            text += f" @${words} ld.global{hints}{vector}.b32 {target}, [${words + 1}];"
            constraints = ["=&r"] * words + ["b", "l"] + ["r"] * words
        result = b.asm(ir.FunctionType(returned, [a.type for a in args]), text, ",".join(constraints), args,
                       side_effect=True)
        if words == 1:
            return b.bitcast(result, ty)
        vector = ir.Constant(ir.VectorType(I32, words), None)
        for i in range(words):
            vector = b.insert_element(vector, b.extract_value(result, i), ir.Constant(I32, i))
        return b.bitcast(vector, ty)

    def _as_words(self, value: ir.Value, words: int) -> list:
        """``value``'s bits as ``words`` 32-bit integers, lowest first."""
        b = self.b
        bits = b.bitcast(value, I32 if words == 1 else ir.VectorType(I32, words))
        return [bits] if words == 1 else [b.extract_element(bits, ir.Constant(I32, i)) for i in range(words)]

    def _predicated_store(self, predicate: Optional[ir.Value], p: ir.Value, value: ir.Value, hints: str = "") -> bool:
        """``value`` (4, 8 or 16 bytes of numbers) written to ``p`` where ``predicate`` holds (always
        when it is None), as one predicated PTX store with the qualifiers ``hints`` (see
        ``_predicated_load``); False, writing nothing, for other sizes."""
        words = _words(value.type)
        if not words:
            return False
        b = self.b
        parts = self._as_words(value, words)
        source = "$2" if words == 1 else "{" + ", ".join(f"${i + 2}" for i in range(words)) + "}"
        text = f"@$0 st.global{hints}{f'.v{words}' if words > 1 else ''}.b32 [$1], {source};"
        if predicate is None:
            predicate = ir.Constant(I1, 1)
        args = [predicate, b.ptrtoint(p, I64)] + parts
        b.asm(ir.FunctionType(VOID, [a.type for a in args]), text, ",".join(["b", "l"] + ["r"] * words), args,
              side_effect=True)
        return True

    def _group_vec(self, pointer: Value, layout: L.Layout, vec: int) -> int:
        """How many of a group's ``vec`` registers one vector access may cover."""
        info = self.axis.get(pointer)
        if info is None or vec == 1:
            return 1
        fast = layout.reg_bits[0][0]
        size = item_size(pointer.type.scalar.element_ty)
        n = min(vec, info.contiguity[fast], max(1, 16 // size))
        while n > 1 and info.divisibility[fast] % (n * size):
            n //= 2
        return n

    def _mask_vec(self, mask: Optional[Value], layout: L.Layout, vec: int) -> int:
        if mask is None or vec == 1:
            return vec
        info = self.axis.get(mask)
        if info is None:
            return 1
        return min(vec, info.constancy[layout.reg_bits[0][0]])

    def lower_load(self, op: Operation) -> None:
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        result = op.results[0]
        dtype = result.type.scalar
        mem = memory_type(dtype)
        volatile = bool(op.attrs.get("volatile", False)) or self.spinning > 0
        if not _is_block(pointer):
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0),
                                     self.scalar(mask) if mask is not None else None)
            p = self.global_pointer(self.scalar(pointer))
            fallback = self.scalar(other) if other is not None else constant(dtype, 0)

            def read():
                return self._from_memory(self._read(p, mem, item_size(dtype), volatile), dtype)

            self.scalars[result.id] = self._guarded(predicate, read, fallback)
            return
        if result.id in self.async_tiles:  # straight into a dot's operand tile (async_copy.py)
            self.copy_into_tile(op)
            return
        layout = self.assigned_layout(result) or self.access_layout(pointer, mask)
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        others = self.regs(other, layout) if other is not None else None
        hints = cache_hints(op, LOAD_CACHE_OPERATORS)
        out = [None] * layout.num_regs
        for first, group in self._vector_groups(layout):
            vec = 1 if volatile or self.checks else self._mask_vec(mask, layout,
                                                                     self._group_vec(pointer, layout, group))
            for start in range(first, first + group, vec):
                predicate = self.checked(pointer, pointers[start], self.lane_number(layout, start),
                                         masks[start] if masks is not None else None)
                p = self.global_pointer(pointers[start])
                if vec == 1:
                    def read(p=p):
                        return self._from_memory(self._read(p, mem, item_size(dtype), volatile), dtype)

                    fallback = others[start] if others is not None else constant(dtype, 0)
                    value = None
                    if (predicate is not None or hints) and not volatile:
                        value = self._predicated_load(predicate, p, mem, self._to_memory(fallback, dtype), hints)
                    out[start] = self._guarded(predicate, read, fallback) if value is None else value
                    continue
                vector_ty = ir.VectorType(mem, vec)

                def read_vector(p=p, vector_ty=vector_ty, vec=vec):
                    return b.load(p, typ=vector_ty, align=vec * item_size(dtype))

                if others is not None:
                    fallback = self._vector_of([self._to_memory(others[start + i], dtype) for i in range(vec)], vector_ty)
                else:
                    fallback = ir.Constant(vector_ty, None) if predicate is None else self._vector_of(
                        [self._to_memory(constant(dtype, 0), dtype)] * vec, vector_ty)
                vector = None
                if (predicate is not None or hints) and not volatile:
                    vector = self._predicated_load(predicate, p, vector_ty, fallback, hints)
                if vector is None:
                    vector = self._guarded(predicate, read_vector, fallback)
                for i in range(vec):
                    out[start + i] = self._from_memory(b.extract_element(vector, ir.Constant(I32, i)), dtype)
        self.dist[result.id] = (layout, out)

    def _read(self, p, ty, align: int, volatile: bool):
        """A load; a volatile one is a relaxed atomic load, which the compiler may not hoist or merge
        (a spin wait must see other programs' writes), an acquiring one inside a spin wait."""
        if volatile:
            ordering = "acquire" if self.spinning else "monotonic"
            return self.b.load_atomic(p, f'syncscope("device") {ordering}', align, typ=ty)
        return self.b.load(p, typ=ty, align=align)

    def _vector_of(self, values, vector_ty):
        b = self.b
        vector = ir.Constant(vector_ty, None)
        for i, value in enumerate(values):
            vector = b.insert_element(vector, value, ir.Constant(I32, i))
        return vector

    def _from_memory(self, value, dtype):
        if register_type(dtype) == I1:
            return self.b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def _to_memory(self, value, dtype):
        if value.type == I1:
            return self.b.zext(value, I8)
        return value

    def lower_store(self, op: Operation) -> None:
        b = self.b
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        if not _is_block(pointer):
            predicate = self._and(self.first_thread(), self.scalar(mask) if mask is not None else None)
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0), predicate)
            p = self.global_pointer(self.scalar(pointer))
            v = self._to_memory(self.scalar(value), dtype)
            self._guarded(predicate, lambda: b.store(v, p, align=item_size(dtype)) and None)
            return
        layout = self.access_layout(pointer, mask)
        pointers = self.regs(pointer, layout)
        values = self.regs(value, layout) if _is_block(value) else [self.scalar(value)] * layout.num_regs
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        hints = cache_hints(op, STORE_CACHE_OPERATORS)
        for first, group in self._vector_groups(layout):
            vec = 1 if self.checks else self._mask_vec(mask, layout, self._group_vec(pointer, layout, group))
            for start in range(first, first + group, vec):
                predicate = self._and(owner, masks[start] if masks is not None else None)
                predicate = self.checked(pointer, pointers[start], self.lane_number(layout, start), predicate)
                p = self.global_pointer(pointers[start])
                if vec == 1:
                    v = self._to_memory(values[start], dtype)
                    if (predicate is None and not hints) or not self._predicated_store(predicate, p, v, hints):
                        self._guarded(predicate, lambda p=p, v=v: b.store(v, p, align=item_size(dtype)) and None)
                    continue
                vector_ty = ir.VectorType(memory_type(dtype), vec)
                vector = self._vector_of([self._to_memory(values[start + i], dtype) for i in range(vec)], vector_ty)
                if (predicate is None and not hints) or not self._predicated_store(predicate, p, vector, hints):
                    self._guarded(predicate,
                                  lambda p=p, vector=vector, vec=vec: b.store(vector, p, align=vec * item_size(dtype))
                                  and None)

    # atomics --------------------------------------------------------------------------------------
    _SCOPES: ClassVar[dict] = {"gpu": "device", "cta": "block", "sys": ""}

    def _atomic(self, op: Operation, apply) -> None:
        """``apply(address, operand) -> old value`` in the owning thread of each active element, where
        ``operand(v)`` gives that element of operand ``v``; the old values reach every thread (through
        shared memory when the layout replicates)."""
        pointer, mask = op.operand("pointer"), op.operand("mask")
        result = op.results[0]
        dtype = pointer.type.scalar.element_ty
        if not _is_block(pointer):
            predicate = self._and(self.first_thread(), self.scalar(mask) if mask is not None else None)
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0), predicate)
            old = self._guarded(predicate, lambda: apply(self.scalar(pointer), self.scalar), constant(dtype, 0))
            self.reserve(8)
            self.barrier()
            self._guarded(self.first_thread(), lambda: self.smem_store(ir.Constant(I32, 0), old, dtype) and None)
            self.barrier()
            self.scalars[result.id] = self.smem_load(ir.Constant(I32, 0), dtype)
            return
        layout = L.blocked(_shape(pointer.type), self.num_warps, None, 1)
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        for v in op.operands[1:]:
            self.regs(v, layout)  # computed here, where every guarded block below sees them
        olds = []
        for r in range(layout.num_regs):
            predicate = self._and(owner, masks[r] if masks is not None else None)
            predicate = self.checked(pointer, pointers[r], self.lane_number(layout, r), predicate)

            def operand(v, r=r):
                return self.regs(v, layout)[r]

            olds.append(self._guarded(predicate, lambda r=r, operand=operand: apply(pointers[r], operand),
                                      constant(dtype, 0)))
        if owner is not None:
            numel = 1
            for n in layout.shape:
                numel *= n
            self.reserve(numel * item_size(dtype))
            self.barrier()
            for r, old in enumerate(olds):
                index = self.linear_index(self.element_index(layout, r), layout.shape)
                self._guarded(owner, lambda index=index, old=old: self.smem_store(index, old, dtype) and None)
            self.barrier()
            olds = [self.smem_load(self.linear_index(self.element_index(layout, r), layout.shape), dtype)
                    for r in range(layout.num_regs)]
        self.dist[result.id] = (layout, olds)

    def _ordering(self, op: Operation) -> str:
        return atomics.ordering_of(op, self._SCOPES[op.attrs.get("scope", "gpu")])

    def lower_atomic_rmw(self, op: Operation) -> None:
        kind = op.attrs["kind"]
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = self._ordering(op)
        value = op.operand("value")
        if dtype.is_bool() and not dtype.is_ptr():
            raise UnsupportedOp("atomics on int1")
        sem = op.attrs.get("sem", "acq_rel")
        scope = self._SCOPES[op.attrs.get("scope", "gpu")] or None

        def apply(address, operand):
            # NVPTX lowers every atomicrmw as relaxed (LLVM 22: its ordering is dropped), so the
            # ordering is fences around it: release before, acquire after (PTX fence.acq_rel)
            if sem in ("release", "acq_rel"):
                self.b.fence("release", scope)
            old = atomics.rmw(self.b, self.function, kind, dtype, self.global_pointer(address), operand(value),
                              ordering)
            if sem in ("acquire", "acq_rel"):
                self.b.fence("acquire", scope)
            return old

        self._atomic(op, apply)

    def lower_atomic_cas(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = self._ordering(op)
        compare, value = op.operand("compare"), op.operand("value")
        self._atomic(op, lambda address, operand: atomics.cas(
            self.b, dtype, self.global_pointer(address), operand(compare), operand(value), ordering))
