"""Loads, stores and atomics on the CPU: reads into buffers (or in place), loads deferred into the
loop of the store they feed, writes, and atomic read-modify-write and compare-and-swap.
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Value
from ..llvm import atomics
from ..llvm import scalar as lanes
from ..llvm.lowering import UnsupportedOp
from ..llvm.types import I1, I32, I64, I8, VOID, constant, item_size, memory_type, register_type
from .placement import READ_IN_STORE, held_form, loads_read_in_store
from .values import PREFETCH_BYTES, Buffer, _shape, expect, row_major_strides


class Memory:
    def lower_load(self, op: Operation) -> None:
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        result = op.results[0]
        dtype = result.type.scalar
        self._element_type = memory_type(dtype)
        volatile = op.attrs.get("volatile", False)
        if result.encoding == READ_IN_STORE:
            self._defer_load(op)
            return
        every = self.check_access(pointer, mask, dtype)
        if not isinstance(result.type, T.block_type):
            address = self.value_at(pointer, ())
            if mask is None:
                self.scalars[result.id] = self._read(address, dtype, volatile)
                return
            slot = self.scalar_slot(register_type(dtype))
            fallback = self.value_at(other, ()) if other is not None else constant(dtype, 0)
            b.store(fallback, slot)
            self.if_then(self.value_at(mask, ()), lambda: b.store(self._read(address, dtype, volatile), slot))
            self.scalars[result.id] = b.load(slot)
            return
        form = held_form(result.encoding)
        if form is None:
            stored_type, convert = dtype, (lambda x: x)
        else:  # read by a dot alone: held in the form its product reads (backends/cpu/dot.py)
            from . import dot

            stored_type = form[0]
            convert = lambda x: dot.pack(b, x, dtype, *form)  # noqa: E731
        if form is None and self._reads_in_place(op):
            self._load_in_place(op, every)
            return
        buffer = self.new_buffer(stored_type, _shape(result.type))
        self._read_into(buffer, op, every, convert)
        self.buffers[result.id] = buffer

    def _read_into(self, buffer: Buffer, op: Operation, every, convert=lambda x: x) -> None:
        """Fills ``buffer`` with the block load ``op`` (checked, ``every`` its all-lanes-active
        flag): the lanes its mask leaves inactive read ``other`` (0 without it), the others memory,
        each lane through ``convert``."""
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        dtype = op.results[0].type.scalar
        volatile = op.attrs.get("volatile", False)
        if mask is not None:
            fill_value = (lambda idx: self.value_at(other, idx)) if other is not None else (lambda idx: constant(dtype, 0))
            b_every = b.load(every)
            with self.cold(self._is_tail(mask)):
                self.if_then(b.not_(b_every), lambda: self.loop_nest(buffer.shape, lambda idx: self.store_buffer(
                    buffer, idx, convert(fill_value(idx)))))
        self._element_type = memory_type(dtype)
        self.access_nest(pointer, every, mask, lambda idx, address, masked: self.store_buffer(
            buffer, idx, convert(self._read(address, dtype, volatile))))

    def _reads_in_place(self, op: Operation) -> bool:
        """Whether the block load ``op`` may be read where it lies instead of copied into a buffer:
        one row of consecutive addresses (its lanes in the buffer's order), from a tensor that no
        store or atomic of the kernel writes (not in ``self.written``: so no program of the launch can
        change it while the value is live), not volatile, not a bool (held as i1)."""
        pointer = op.operand("pointer")
        shape = _shape(pointer.type)
        dtype = op.results[0].type.scalar
        return (len(shape) == 1 and self._run_length(pointer) == shape[0] and not op.attrs.get("volatile", False)
                and not dtype.is_bool() and self._one_tensor(pointer) and self.provenance[pointer.id] not in self.written)

    def _load_in_place(self, op: Operation, every) -> None:
        """The loaded block's buffer is the tensor's memory itself when every lane is active and the
        row's bytes are outside every tensor the kernel writes (two arguments may be views of one
        array: compared at run time, a few instructions per program); else a buffer filled as
        ``lower_load`` does. A row kernel (softmax, layer norm) then reads its row where it lies
        instead of copying 4 KB before reading it again."""
        b = self.b
        pointer = op.operand("pointer")
        result = op.results[0]
        dtype = result.type.scalar
        shape = _shape(result.type)
        where = self.value_at(pointer, (ir.Constant(I64, 0),))
        # the bytes the row reads (not its tensor's: with the checks compiled out a stray row is
        # still copied when a write may reach it)
        low = b.ptrtoint(where, I64)
        high = b.add(low, ir.Constant(I64, shape[0] * item_size(dtype)))
        apart = b.load(every) if every is not None else ir.Constant(I1, 1)
        for w in self.written:
            w_low, w_high = self.bounds[w]
            apart = b.and_(apart, b.or_(b.icmp_unsigned("<=", w_high, low), b.icmp_unsigned("<=", high, w_low)))
        # The row's lines asked for at once: its first reader (a reduction's tree) takes eight
        # strides through the row, which from DRAM keeps fewer lines in flight than a copy did.
        row_bytes = min(shape[0] * item_size(dtype), PREFETCH_BYTES)
        self.counted_loop(-(-row_bytes // 64), lambda k: lanes.intrinsic(
            b, "llvm.prefetch.p0", VOID, [b.gep(where, [b.mul(k, ir.Constant(I64, 64))], source_etype=I8),
                                          ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)]))
        if isinstance(apart, ir.Constant):
            self.buffers[result.id] = Buffer(where, dtype, shape, row_major_strides(shape))
            return
        copy = self.new_buffer(dtype, shape)
        mask = op.operand("mask")
        with self.cold(mask is None or self._is_tail(mask)):
            self.if_then(b.not_(apart), lambda: self._read_into(copy, op, every))
        self.buffers[result.id] = Buffer(b.select(apart, where, copy.pointer), dtype, shape, row_major_strides(shape))

    def _defer_load(self, op: Operation) -> None:
        """A load read by one store chain: checked now, read lane by lane inside the store's loop."""
        pointer, mask = op.operand("pointer"), op.operand("mask")
        extent = (self.scalar_slot(I64), self.scalar_slot(I64))
        every = self.check_access(pointer, mask, op.results[0].type.scalar, extent)
        self.deferred[op.results[0].id] = (op, every, extent)

    def _read_deferred(self, v: Value, idx) -> ir.Value:
        """Lane ``idx`` of a deferred load, read from memory now (under its mask, unless the store's
        loop is the unmasked version)."""
        op, _, _ = self.deferred[v.id]
        b = self.b
        dtype = v.type.scalar
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        address = self.value_at(pointer, idx)
        if mask is None or self.unmasked_reads:
            return self._read(address, dtype)
        slot = self.scalar_slot(register_type(dtype))
        b.store(self.value_at(other, idx) if other is not None else constant(dtype, 0), slot)
        self.if_then(self.value_at(mask, idx), lambda: b.store(self._read(address, dtype), slot), rare=False)
        return b.load(slot)

    def _read(self, address, dtype, volatile=False):
        value = self.b.load(address, typ=memory_type(dtype))
        value.align = item_size(dtype)
        if volatile:
            value.volatile = True if hasattr(value, "volatile") else None
        if dtype.is_bool() and not dtype.is_ptr():
            return self.b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def _write(self, address, value, dtype):
        if dtype.is_bool() and not dtype.is_ptr():
            value = self.b.zext(value, I8)
        store = self.b.store(value, address)
        store.align = item_size(dtype)

    def lower_store(self, op: Operation) -> None:
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        self._element_type = memory_type(dtype)
        fused = [v for v in loads_read_in_store(op, self.op_index) if v.id in self.deferred]
        extent = (self.scalar_slot(I64), self.scalar_slot(I64)) if fused else None
        every = self.check_access(pointer, mask, dtype, extent)
        if self.debug:  # debug mode: every active lane checked for a race before any is written
            self.check_store_races(op, every)

        def write(idx, address, masked=False):
            self._write(address, self.value_at(value, idx), dtype)
            if self.debug:
                self.record_store(pointer, address)

        if not isinstance(pointer.type, T.block_type):
            address = self.value_at(pointer, ())
            if mask is None:
                write((), address)
            else:
                self.if_then(self.value_at(mask, ()), lambda: write((), address))
            return

        if not fused:
            self._element_type = memory_type(dtype)
            self.access_nest(pointer, every, mask, write)
            return
        self._store_fused(op, fused, every, extent, write)

    def _store_fused(self, op, fused, every, extent, write) -> None:
        """A store whose value reads loads in its own loop, one pass over memory. When a load's bytes
        may overlap the store's (other than lane for lane at the same pointer), the loads are read
        into buffers first, so every lane reads memory as it was before the store."""
        b = self.b
        pointer, mask = op.operand("pointer"), op.operand("mask")
        low, high = b.load(extent[0]), b.load(extent[1])
        apart = ir.Constant(I1, 1)
        every_all = b.load(every) if every is not None else ir.Constant(I1, 1)
        for v in fused:
            load, load_every, load_extent = self.deferred[v.id]
            if load_every is not None:
                every_all = b.and_(every_all, b.load(load_every))
            if load.operand("pointer") is pointer:
                continue  # lane i reads and then writes its own address
            load_low, load_high = b.load(load_extent[0]), b.load(load_extent[1])
            disjoint = b.or_(b.icmp_unsigned("<=", load_high, low), b.icmp_unsigned("<=", high, load_low))
            apart = b.and_(apart, disjoint)
        one_pass = self.function.append_basic_block("store_fused")
        staged = self.function.append_basic_block("store_staged")
        done = self.function.append_basic_block("stored")
        # (staged is the common path of a kernel called in place, its output a view of an input:
        # the weights then mislead LLVM's layout, never the results)
        expect(b.cbranch(apart, one_pass, staged), True)
        # one pass: unmasked when the store and every load are fully active
        b.position_at_end(one_pass)
        self._element_type = memory_type(pointer.type.scalar.element_ty)
        saved = dict(self.memo)
        unmasked = self.function.append_basic_block("store_unmasked")
        masked = self.function.append_basic_block("store_masked")
        masks = [mask] + [self.deferred[v.id][0].operand("mask") for v in fused]
        branch = b.cbranch(every_all, unmasked, masked)
        if self._all_tails(masks):
            expect(branch, True)
        b.position_at_end(unmasked)
        self.unmasked_reads = True
        self.access_nest(pointer, None, None, write)
        self.unmasked_reads = False
        self.memo = dict(saved)
        b.branch(done)
        b.position_at_end(masked)
        # in a box's active part, loads under the store's own mask read without a test per lane
        self._box_reads_unmasked = all(m is None or m is mask for m in masks)
        with self.cold(self._all_tails(masks) and (mask is None or self._box(mask) is None)):
            self.access_nest(pointer, every, mask, write)
        self._box_reads_unmasked = False
        self.memo = dict(saved)
        b.branch(done)
        # staged (the store may overwrite what a load reads): the loads into buffers, then the store
        b.position_at_end(staged)
        with self.cold():
            for v in fused:
                buffer = self.new_buffer(v.type.scalar, _shape(v.type))
                self.fill(buffer, v)
                self.buffers[v.id] = buffer
            self.access_nest(pointer, every, mask, write)
        for v in fused:
            del self.buffers[v.id]
        self.memo = dict(saved)
        b.branch(done)
        b.position_at_end(done)

    # atomics -----------------------------------------------------------------------------------------
    def _atomic(self, op: Operation, apply) -> None:
        """Per active lane in lane order: ``apply(address, lane idx) -> old value``."""
        b = self.b
        pointer, mask = op.operand("pointer"), op.operand("mask")
        result = op.results[0]
        dtype = pointer.type.scalar.element_ty
        self._element_type = memory_type(dtype)
        self.check_access(pointer, mask, dtype)
        shape = _shape(pointer.type)
        buffer = self.new_buffer(dtype, shape) if shape else None
        slot = None if shape else self.scalar_slot(register_type(dtype))
        if slot is not None:
            b.store(constant(dtype, 0), slot)

        def lane(idx):
            address = self.value_at(pointer, idx)

            def run():
                old = apply(address, idx)
                if buffer is not None:
                    self.store_buffer(buffer, idx, old)
                else:
                    b.store(old, slot)

            if buffer is not None and mask is not None:
                self.store_buffer(buffer, idx, constant(dtype, 0))
            if mask is None:
                run()
            else:
                self.if_then(self.value_at(mask, idx), run, rare=False)

        self.loop_nest(shape, lane)
        if buffer is not None:
            self.buffers[result.id] = buffer
        else:
            self.scalars[result.id] = b.load(slot)

    def lower_atomic_rmw(self, op: Operation) -> None:
        kind = op.attrs["kind"]
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = atomics.ordering_of(op)
        value = op.operand("value")
        if dtype.is_bool() and not dtype.is_ptr():
            raise UnsupportedOp("atomics on int1")
        self._atomic(op, lambda address, idx: atomics.rmw(self.b, self.function, kind, dtype, address,
                                                          self.value_at(value, idx), ordering))

    def lower_atomic_cas(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = atomics.ordering_of(op)
        self._atomic(op, lambda address, idx: atomics.cas(self.b, dtype, address,
                                                          self.value_at(op.operand("compare"), idx),
                                                          self.value_at(op.operand("value"), idx), ordering))

    def lower_atomic_load(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = atomics.ORDERING[op.attrs.get("sem", "acquire")]
        self._atomic(op, lambda address, idx: self.b.load_atomic(address, ordering, item_size(dtype),
                                                                 typ=memory_type(dtype)))

    def lower_atomic_store(self, op: Operation) -> None:
        """One atomic store per active lane, in lane order."""
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        ordering = atomics.ORDERING[op.attrs.get("sem", "release")]
        self._element_type = memory_type(dtype)
        self.check_access(pointer, mask, dtype)

        def lane(idx):
            def run():  # an exchange whose old value is dropped: llvmlite builds no atomic store on opaque pointers
                self.b.atomic_rmw("xchg", self.value_at(pointer, idx), self.value_at(value, idx), ordering)

            if mask is None:
                run()
            else:
                self.if_then(self.value_at(mask, idx), run, rare=False)

        self.loop_nest(_shape(pointer.type), lane)

    def lower_barrier(self, op: Operation) -> None:
        pass  # one program runs on one thread: its accesses are already in order
