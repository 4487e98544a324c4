"""Shared memory: the one dynamic array of the program (``tritium_shared``), sized to the most any op
needs at once; the barrier around its uses; a block written row-major and read back in another
layout; and the ops whose results take their elements from elsewhere in the block (flip, cat,
gather) or count them (histogram) through it.
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation
from .. import reports
from ..llvm.types import I1, I8, I32, I64, VOID, item_size, memory_type, register_type
from . import layouts as L
from .values import _row_major_strides, _shape


class SharedMemory:
    """Shared memory's helpers and the ops that go through it."""

    def barrier(self) -> None:
        """``barrier.sync 0``: every thread of the program waits for the others, and their shared-memory
        writes before it are seen after it. Not the ``.aligned`` form (``bar.sync``), which requires the
        threads of each warp to arrive together: after a masked access's branch they may not."""
        self.intrinsic("llvm.nvvm.barrier.cta.sync.all", VOID, [ir.Constant(I32, 0)])

    def smem_pointer(self, byte_offset: ir.Value) -> ir.Value:
        """A byte of the scratch memory ops share, which follows the dots' operand tiles
        (``async_copy.py``: ``scratch_offset`` bytes, usually none), or shares their bytes while no
        pipelined ring is live (``AsyncCopies.scratch_used``)."""
        self.scratch_used()
        if self.scratch_offset:
            byte_offset = self.b.add(byte_offset, ir.Constant(byte_offset.type, self.scratch_offset))
        return self.b.gep(self.smem, [byte_offset], source_etype=I8)

    def reserve(self, nbytes: int) -> None:
        self.smem_bytes = max(self.smem_bytes, (nbytes + 15) // 16 * 16)

    def smem_store(self, element_index: ir.Value, value: ir.Value, dtype, base_bytes: int = 0) -> None:
        b = self.b
        if value.type == I1:
            value = b.zext(value, I8)
        size = item_size(dtype) if not dtype.is_bool() else 1
        offset = b.add(b.mul(element_index, ir.Constant(I32, size)), ir.Constant(I32, base_bytes))
        b.store(value, self.smem_pointer(offset), align=size)

    def smem_load(self, element_index: ir.Value, dtype, base_bytes: int = 0) -> ir.Value:
        b = self.b
        mem = memory_type(dtype)
        size = item_size(dtype) if not dtype.is_bool() else 1
        offset = b.add(b.mul(element_index, ir.Constant(I32, size)), ir.Constant(I32, base_bytes))
        value = b.load(self.smem_pointer(offset), typ=mem, align=size)
        if register_type(dtype) == I1:
            value = b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def _smem_put(self, index, value, dtype, base_bytes: int) -> None:
        if isinstance(dtype, T.pointer_type):
            self.smem_store(index, self.b.ptrtoint(value, I64), T.int64, base_bytes)
        else:
            self.smem_store(index, value, dtype, base_bytes)

    def _smem_get(self, index, ty, dtype, base_bytes: int):
        if isinstance(dtype, T.pointer_type):
            return self.b.inttoptr(self.smem_load(index, T.int64, base_bytes), ty)
        return self.smem_load(index, dtype, base_bytes)

    def linear_index(self, index: list, shape) -> ir.Value:
        b = self.b
        total = None
        for i, stride in zip(index, _row_major_strides(shape)):
            term = b.mul(i, ir.Constant(I32, stride)) if stride != 1 else i
            total = term if total is None else b.add(total, term)
        return total if total is not None else ir.Constant(I32, 0)

    def write_block(self, layout: L.Layout, values: list, dtype, base_bytes: int = 0) -> None:
        """Each thread writes its registers at their row-major positions (replicas write the same)."""
        for r, value in enumerate(values):
            self.smem_store(self.linear_index(self.element_index(layout, r), layout.shape), value, dtype, base_bytes)

    def convert(self, source: L.Layout, values: list, target: L.Layout, dtype) -> list:
        """``values`` (in ``source``) in ``target`` layout, through shared memory."""
        numel = 1
        for n in source.shape:
            numel *= n
        self.reserve(numel * item_size(dtype))
        self.barrier()
        self.write_block(source, values, dtype)
        self.barrier()
        return [self.smem_load(self.linear_index(self.element_index(target, r), target.shape), dtype)
                for r in range(target.num_regs)]

    # ops through shared memory --------------------------------------------------------------------
    def _through_shared(self, op: Operation, sources, index_of) -> None:
        """The result (in the default layout) reads, for each of its elements, element
        ``index_of(result index) -> (source number, linear index)`` of the sources written to shared
        memory one after the other."""
        b = self.b
        result = op.results[0]
        dtype = result.type.scalar
        layout = self.default_layout(_shape(result.type))
        bases, total = [], 0
        for v in sources:
            numel = 1
            for n in _shape(v.type):
                numel *= n
            bases.append(total)
            total += numel
        self.reserve(total * item_size(dtype))
        own = [self.some_layout(v) for v in sources]
        regs = [self.regs(v, lay) for v, lay in zip(sources, own)]
        self.barrier()
        for lay, values, base in zip(own, regs, bases):
            self.write_block(lay, values, dtype, base * item_size(dtype))
        self.barrier()
        out = []
        for r in range(layout.num_regs):
            index = self.element_index(layout, r)
            which, linear = index_of(index)
            out.append(self.smem_load(b.add(linear, ir.Constant(I32, bases[which])) if which else linear, dtype)
                       if isinstance(which, int) else self.smem_load(b.add(linear, b.select(
                           which, ir.Constant(I32, bases[1]), ir.Constant(I32, 0))), dtype))
        self.dist[result.id] = (layout, out)

    def lower_flip(self, op: Operation) -> None:
        axis = op.attrs["axis"]
        shape = _shape(op.results[0].type)

        def index_of(index):
            index = list(index)
            index[axis] = self.b.sub(ir.Constant(I32, shape[axis] - 1), index[axis])
            return 0, self.linear_index(index, shape)

        self._through_shared(op, [op.operands[0]], index_of)

    def lower_cat(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        lhs, rhs = op.operands
        left_shape = _shape(lhs.type)
        right_shape = _shape(rhs.type)
        split = left_shape[axis]

        def index_of(index):
            second = b.icmp_unsigned(">=", index[axis], ir.Constant(I32, split))
            moved = list(index)
            moved[axis] = b.select(second, b.sub(index[axis], ir.Constant(I32, split)), index[axis])
            left = self.linear_index(moved, left_shape)
            right = self.linear_index(moved, right_shape)
            return second, b.select(second, right, left)

        self._through_shared(op, [lhs, rhs], index_of)

    def lower_gather(self, op: Operation) -> None:
        """Through shared memory: the source written row-major, each result element read at its
        index along the axis (an index outside the axis is recorded and reads element 0)."""
        b = self.b
        source, index = op.operand("source"), op.operand("index")
        axis = op.attrs["axis"]
        dtype = source.type.scalar
        source_shape = _shape(source.type)
        layout_s = self.some_layout(source)
        values = self.regs(source, layout_s)
        layout = self.some_layout(index)
        indices = self.regs(index, layout)
        numel = 1
        for n in source_shape:
            numel *= n
        self.reserve(numel * item_size(dtype))
        self.barrier()
        self.write_block(layout_s, values, dtype)
        self.barrier()
        extent = source_shape[axis]
        signed = index.type.scalar.is_int_signed()
        out = []
        for r, at in enumerate(indices):
            at = b.sext(at, I64) if signed and at.type.width < 64 else (b.zext(at, I64) if at.type.width < 64 else at)
            outside = b.icmp_unsigned(">=", at, ir.Constant(I64, extent))
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(outside, reports.GATHER_INDEX, lane, at, ir.Constant(I64, extent))
            position = self.element_index(layout, r)
            position[axis] = b.trunc(b.select(outside, ir.Constant(I64, 0), at), I32)
            out.append(self.smem_load(self.linear_index(position, source_shape), dtype))
        self.dist[op.results[0].id] = (layout, out)

    def lower_histogram(self, op: Operation) -> None:
        """Counts in shared memory with atomic adds, then read out by every thread in the result's
        layout. A value outside the bins (of an active lane) is recorded and not counted."""
        b = self.b
        value, mask = op.operand("value"), op.operand("mask")
        bins = op.attrs["num_bins"]
        result = op.results[0]
        out_type = register_type(result.type.scalar)
        layout = self.some_layout(value)
        values = self.regs(value, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        self.reserve(bins * 4)
        self.barrier()
        self.counted_loop(self.tid, ir.Constant(I32, bins), self.threads,
                          lambda i: self.smem_store(i, ir.Constant(I32, 0), T.int32) and None)
        self.barrier()
        signed = value.type.scalar.is_int_signed()
        for r, v in enumerate(values):
            wide = b.sext(v, I64) if signed and v.type.width < 64 else (b.zext(v, I64) if v.type.width < 64 else v)
            active = self._and(owner, masks[r] if masks is not None else None)
            outside = b.icmp_unsigned(">=", wide, ir.Constant(I64, bins))
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(self._and(active, outside), reports.HISTOGRAM_VALUE, lane, wide, ir.Constant(I64, bins))
            counted = self._and(active, b.not_(outside))

            def count(wide=wide):
                offset = b.mul(b.trunc(wide, I32), ir.Constant(I32, 4))
                b.atomic_rmw("add", self.smem_pointer(offset), ir.Constant(I32, 1), 'syncscope("block") monotonic')

            self._guarded(counted, lambda count=count: count() and None)
        self.barrier()
        layout_out = self.default_layout((bins,))
        counts = []
        for r in range(layout_out.num_regs):
            count = self.smem_load(self.element_index(layout_out, r)[0], T.int32)
            counts.append(b.trunc(count, out_type) if out_type.width < 32 else (
                b.zext(count, out_type) if out_type.width > 32 else count))
        self.dist[result.id] = (layout_out, counts)
