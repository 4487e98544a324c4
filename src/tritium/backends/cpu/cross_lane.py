"""Ops whose lanes read other lanes, on the CPU: reductions (builtin or with a combine region) in the
interpreter's tree order, scans, sort, gather, histogram, philox and dot (``dot.py``).
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Value
from ..llvm import combine as combining
from ..llvm import scalar as lanes
from ..llvm.lowering import UnsupportedOp
from ..llvm.types import I1, I32, I64, memory_type, register_type
from ..reports import GATHER_INDEX as ERROR_GATHER_INDEX
from ..reports import HISTOGRAM_VALUE as ERROR_HISTOGRAM_VALUE
from .values import REDUCE_FAN_IN, Buffer, _shape, row_major_strides


class CrossLane:
    def _scratch_copy(self, v: Value) -> Buffer:
        buffer = self.new_buffer(v.type.scalar, _shape(v.type))
        self.fill(buffer, v)
        return buffer

    def _combiner(self, op: Operation, dtypes):
        """(lhs lanes, rhs lanes) -> combined lanes, for a reduce or scan's kind."""
        custom = None
        if op.attrs["kind"] == "custom":
            region = op.regions[0]

            def combine_region(left, right):
                for arg, value in zip(region.args, list(left) + list(right)):
                    self.scalars[arg.id] = value
                saved = dict(self.memo)
                terminator = self.lower_region(region)
                result = [self.value_at(v, ()) for v in terminator.operands]
                self.memo = saved
                return result

            custom = combine_region
        try:
            return combining.combiner(self.b, op.attrs["kind"], dtypes, custom)
        except combining.UnknownKind as error:
            raise UnsupportedOp(str(error)) from None

    def lower_reduce(self, op: Operation) -> None:
        """The interpreter's halving tree (lane i meets lane i + n/2, then i + n/4, ...), computed in
        stages of up to ``REDUCE_FAN_IN`` leaves: a stage's loop runs over the lanes it keeps and meets,
        in the tree's order, the leaves each of them stands for (the first log2(fan-in) levels of the
        tree at once). The first stage reads the operands where they are (a lazy operand is computed
        there, lane by lane), so no copy of the block is made; each stage writes a buffer 1/fan-in the
        size of the last."""
        b = self.b
        axis = op.attrs["axis"]
        kind = op.attrs["kind"]
        inputs = list(op.operands)
        shape = _shape(inputs[0].type)
        dtypes = [v.type.scalar for v in inputs]
        readers = [lambda idx, v=v: self.value_at(v, idx) for v in inputs]
        if kind in ("argmax", "argmin"):
            readers.append(lambda idx: b.trunc(idx[axis], I32))
            dtypes.append(T.int32)
        combine = self._combiner(op, dtypes)
        size = shape[axis]
        stage = None
        while stage is None or size > 1:
            fan_in = min(REDUCE_FAN_IN, size)
            size //= fan_in
            stage_shape = shape[:axis] + (size,) + shape[axis + 1:]
            stage = [self.new_buffer(dtype, stage_shape) for dtype in dtypes]

            def lane(idx, stage=stage, fan_in=fan_in, size=size, readers=readers):
                leaves = []
                for leaf in range(fan_in):
                    at = list(idx)
                    at[axis] = b.add(idx[axis], ir.Constant(I64, leaf * size)) if leaf else idx[axis]
                    leaves.append([read(tuple(at)) for read in readers])
                while len(leaves) > 1:
                    half = len(leaves) // 2
                    leaves = [combine(leaves[i], leaves[i + half]) for i in range(half)]
                for buffer, value in zip(stage, leaves[0]):
                    self.store_buffer(buffer, idx, value)

            self.loop_nest(stage_shape, lane)
            readers = [lambda idx, buffer=buffer: self.load_buffer(buffer, idx) for buffer in stage]
        outputs = stage[-1:] if kind in ("argmax", "argmin") else stage
        for r, s in zip(op.results, outputs):
            if isinstance(r.type, T.block_type):
                strides = s.strides[:axis] + s.strides[axis + 1:]
                self.buffers[r.id] = Buffer(s.pointer, s.dtype, _shape(r.type), strides)
            else:
                self.scalars[r.id] = self.load_buffer(s, tuple(ir.Constant(I64, 0) for _ in shape))

    def lower_scan(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        reverse = op.attrs.get("reverse", False)
        inputs = list(op.operands)
        shape = _shape(inputs[0].type)
        dtypes = [v.type.scalar for v in inputs]
        out = [self._scratch_copy(v) for v in inputs]
        combine = self._combiner(op, dtypes)
        n = shape[axis]
        outer, inner = shape[:axis], shape[axis + 1:]

        def along(prefix):
            def step(k):
                position = b.sub(ir.Constant(I64, n - 1), b.add(k, ir.Constant(I64, 1))) if reverse else b.add(
                    k, ir.Constant(I64, 1))
                previous = b.add(position, ir.Constant(I64, 1)) if reverse else b.sub(position, ir.Constant(I64, 1))

                def lane(suffix):
                    here = prefix + (position,) + suffix
                    before = prefix + (previous,) + suffix
                    left = [self.load_buffer(s, before) for s in out]
                    right = [self.load_buffer(s, here) for s in out]
                    for s, value in zip(out, combine(left, right)):
                        self.store_buffer(s, here, value)

                self.loop_nest(inner, lane)

            if n > 1:
                self.counted_loop(n - 1, step)

        self.loop_nest(outer, along)
        for r, s in zip(op.results, out):
            self.buffers[r.id] = s

    def lower_dot(self, op: Operation) -> None:
        from . import dot

        dot.lower_dot(self, op)

    def lower_philox(self, op: Operation) -> None:
        if not isinstance(op.results[0].type, T.block_type):
            self._lower_scalar(op)
            return
        buffers = [self.new_buffer(r.type.scalar, _shape(r.type)) for r in op.results]

        def lane(idx):
            values = lanes.lower_op(self.b, op, [self.value_at(o, idx) for o in op.operands])
            for buffer, value in zip(buffers, values):
                self.store_buffer(buffer, idx, value)

        self.loop_nest(buffers[0].shape, lane)
        for r, buffer in zip(op.results, buffers):
            self.buffers[r.id] = buffer

    def lower_histogram(self, op: Operation) -> None:
        b = self.b
        value, mask = op.operand("value"), op.operand("mask")
        result = op.results[0]
        bins = op.attrs["num_bins"]
        buffer = self.new_buffer(result.type.scalar, (bins,))
        rty = register_type(result.type.scalar)
        self.loop_nest((bins,), lambda idx: self.store_buffer(buffer, idx, ir.Constant(rty, 0)))
        source = value.type.scalar
        shape = _shape(value.type)

        def lane(idx):
            v = self.value_at(value, idx)
            wide = b.sext(v, I64) if source.is_int_signed() and v.type.width < 64 else (
                b.zext(v, I64) if v.type.width < 64 else v)
            inside = b.icmp_unsigned("<", wide, ir.Constant(I64, bins))
            if source.is_int_signed():
                inside = b.and_(inside, b.icmp_signed(">=", wide, ir.Constant(I64, 0)))
            active = self.value_at(mask, idx) if mask is not None else ir.Constant(I1, 1)
            # an active lane outside the bins is an error of the kernel (a GPU counts it in bin value & (bins - 1))
            self.if_then(b.and_(active, b.not_(inside)), lambda: self.fail(
                ERROR_HISTOGRAM_VALUE, self.linear(idx, row_major_strides(shape)), wide, ir.Constant(I64, bins)))
            inside = b.and_(inside, active)

            def count():
                slot = b.gep(buffer.pointer, [wide], source_etype=memory_type(result.type.scalar))
                b.store(b.add(b.load(slot, typ=rty), ir.Constant(rty, 1)), slot)

            self.if_then(inside, count)

        self.loop_nest(shape, lane)
        self.buffers[result.id] = buffer

    def lower_gather(self, op: Operation) -> None:
        b = self.b
        source, index = op.operand("source"), op.operand("index")
        axis = op.attrs["axis"]
        result = op.results[0]
        src = self.materialize(source)
        extent = _shape(source.type)[axis]
        shape = _shape(result.type)
        strides = row_major_strides(shape)
        ity = index.type.scalar
        buffer = self.new_buffer(result.type.scalar, shape)

        def lane(idx):
            i = self.value_at(index, idx)
            wide = b.sext(i, I64) if ity.is_int_signed() and i.type.width < 64 else (
                b.zext(i, I64) if i.type.width < 64 else i)
            outside = b.icmp_unsigned(">=", wide, ir.Constant(I64, extent))
            self.if_then(outside, lambda: self.fail(ERROR_GATHER_INDEX, self.linear(idx, strides), wide,
                                                     ir.Constant(I64, extent)))
            at = list(idx)
            at[axis] = wide
            self.store_buffer(buffer, idx, self.load_buffer(src, tuple(at)))

        self.loop_nest(shape, lane)
        self.buffers[result.id] = buffer

    def lower_sort(self, op: Operation) -> None:
        b = self.b
        value = op.operands[0]
        dtype = value.type.scalar
        shape = _shape(value.type)
        n = shape[-1]
        descending = bool(op.attrs["descending"])
        current = self._scratch_copy(value)
        stages = n.bit_length() - 1
        for stage in range(1, stages + 1):
            for step in range(stage - 1, -1, -1):
                bit = 1 << step
                following = self.new_buffer(dtype, shape)

                def lane(idx, bit=bit, stage=stage, following=following, current=current):
                    position = idx[-1]
                    partner_pos = b.xor(position, ir.Constant(I64, bit))
                    own = self.load_buffer(current, idx)
                    partner = self.load_buffer(current, idx[:-1] + (partner_pos,))
                    if stage == stages:
                        desc = ir.Constant(I1, int(descending))
                    else:
                        desc = b.trunc(b.lshr(position, ir.Constant(I64, stage)), I1)
                    is_right = b.icmp_unsigned("!=", b.and_(position, ir.Constant(I64, bit)), ir.Constant(I64, 0))
                    greater = lanes.greater(self.b, own, partner, dtype)
                    take = b.xor(greater, b.xor(desc, is_right))
                    self.store_buffer(following, idx, b.select(take, partner, own))

                self.loop_nest(shape, lane)
                current = following
        self.buffers[op.results[0].id] = current

    # reporting -----------------------------------------------------------------------------------
