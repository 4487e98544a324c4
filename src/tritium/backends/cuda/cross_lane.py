"""Ops that combine the elements of a block across lanes: reductions along the interpreter's
halving tree (registers, then butterfly shuffles within a warp, then shared memory between warps),
scans (each line along the axis combined in order by one thread, through shared memory) and the
bitonic sort (partners in another register, lane or warp).
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation
from ..llvm import combine as combining
from ..llvm import scalar as lanes
from ..llvm.types import F32, F64, I1, I32, I64, item_size
from . import layouts as L
from . import math as gpu_math
from .values import _combine_tree, _is_block, _row_major_strides, _shared_sizes


class CrossLane:
    """Reductions, scans, sorts and the shuffles and exchanges they are made of."""

    def _custom_combine(self, op: Operation):
        region = op.regions[0]

        def combine(left, right):
            for arg, value in zip(region.args, list(left) + list(right)):
                self.scalars[arg.id] = value
            self.push()
            terminator = self.lower_region(region)
            result = [self.scalar(v) for v in terminator.operands]
            self.pop()
            return result

        return combine

    def shuffle_xor(self, value: ir.Value, lane_mask: int) -> ir.Value:
        b = self.b
        ty = value.type
        if ty in (I64, F64):
            bits = value if ty == I64 else b.bitcast(value, I64)
            low = self.shuffle_xor(b.trunc(bits, I32), lane_mask)
            high = self.shuffle_xor(b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32), lane_mask)
            joined = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
            return joined if ty == I64 else b.bitcast(joined, F64)
        if ty == F32:
            word = b.bitcast(value, I32)
        elif ty == I32:
            word = value
        elif isinstance(ty, ir.IntType):
            word = b.zext(value, I32)
        else:  # a pointer
            return b.inttoptr(self.shuffle_xor(b.ptrtoint(value, I64), lane_mask), ty)
        out = self.intrinsic("llvm.nvvm.shfl.sync.bfly.i32", I32,
                             [ir.Constant(I32, 0xFFFFFFFF), word, ir.Constant(I32, lane_mask), ir.Constant(I32, 31)])
        if ty == F32:
            return b.bitcast(out, F32)
        if ty == I32:
            return out
        return b.trunc(out, ty)

    def _exchange_warps(self, state: dict, dtypes, warp_bit: int) -> dict:
        """Each live register's values from the thread whose warp id differs in ``warp_bit``."""
        regions = self._publish(state, dtypes)
        return self._read_published(self.b.xor(self.tid, ir.Constant(I32, 32 << warp_bit)), state, dtypes, regions)

    def _publish(self, state: dict, dtypes) -> list:
        """Every thread writes its live registers' values to shared memory (one region per register
        and operand, indexed by thread); returns the regions' byte offsets."""
        sizes = _shared_sizes(dtypes)
        regions, offset = [], 0
        for _ in sorted(state):
            row = []
            for size in sizes:
                row.append(offset)
                offset += (self.threads * size + 15) // 16 * 16
            regions.append(row)
        self.reserve(offset)
        self.barrier()
        for slot, r in enumerate(sorted(state)):
            for k, value in enumerate(state[r]):
                self._smem_put(self.tid, value, dtypes[k], regions[slot][k])
        self.barrier()
        return regions

    def _read_published(self, thread: ir.Value, state: dict, dtypes, regions: list) -> dict:
        """The values ``thread`` published (``_publish``), per live register."""
        return {r: [self._smem_get(thread, value.type, dtypes[k], regions[slot][k]) for k, value in enumerate(state[r])]
                for slot, r in enumerate(sorted(state))}

    def _reduce_across_warps(self, state: dict, dtypes, warp_bits: list, combine) -> dict:
        """Consecutive levels of the halving tree along ``warp_bits`` (highest weight first) in one
        shared-memory round trip: every thread reads the values of the warps of its group by their
        position along the axis and combines them in the tree's order."""
        b = self.b
        regions = self._publish(state, dtypes)
        group_mask = sum(32 << bit for bit in warp_bits)
        base = b.and_(self.tid, ir.Constant(I32, ~group_mask & 0xFFFFFFFF))
        sets = [self._read_published(self._group_member(base, warp_bits, member), state, dtypes, regions)
                for member in range(1 << len(warp_bits))]
        return _combine_tree(sets, len(warp_bits), lambda x, y: {r: combine(x[r], y[r]) for r in state})

    def _reduce_across_warps_split(self, state: dict, dtypes, warp_bits: list, combine) -> dict:
        """``_reduce_across_warps`` with the work shared out: of a group's warps (same position off
        ``warp_bits``), each combines, in the tree's order, only some of the live registers (all their
        values at its lane, one per warp of the group) and writes the results once; after one more
        barrier every thread reads the results for its registers. A thread reads its group's size
        plus the live registers' count of values instead of their product."""
        b = self.b
        live = sorted(state)
        count, size = len(live), 1 << len(warp_bits)
        threads = self.threads
        sizes = _shared_sizes(dtypes)
        # per operand, a region of live registers x threads elements, then one of the results
        published, offset = [], 0
        for item in sizes:
            published.append(offset)
            offset += (count * threads * item + 15) // 16 * 16
        results = []
        for item in sizes:
            results.append(offset)
            offset += (count * threads * item + 15) // 16 * 16
        self.reserve(offset)
        self.barrier()
        for slot, r in enumerate(live):
            index = b.add(self.tid, ir.Constant(I32, slot * threads)) if slot else self.tid
            for k, value in enumerate(state[r]):
                self._smem_put(index, value, dtypes[k], published[k])
        self.barrier()
        group_mask = sum(32 << bit for bit in warp_bits)
        base = b.and_(self.tid, ir.Constant(I32, ~group_mask & 0xFFFFFFFF))
        position = ir.Constant(I32, 0)
        for j, bit in enumerate(warp_bits):
            own = b.and_(b.lshr(self.tid, ir.Constant(I32, 5 + bit - j)), ir.Constant(I32, 1 << j))
            position = b.or_(position, own)
        types = [value.type for value in state[live[0]]]
        for q in range(max(1, count // size)):
            slot = b.add(position, ir.Constant(I32, q * size)) if count >= size else \
                b.and_(position, ir.Constant(I32, count - 1))
            first = b.mul(slot, ir.Constant(I32, threads))
            sets = []
            for member in range(size):
                index = b.add(first, self._group_member(base, warp_bits, member))
                sets.append([self._smem_get(index, types[k], dtypes[k], published[k]) for k in range(len(dtypes))])
            index = b.add(first, base)
            for k, value in enumerate(_combine_tree(sets, len(warp_bits), combine)):
                self._smem_put(index, value, dtypes[k], results[k])
        self.barrier()
        return {r: [self._smem_get(b.add(base, ir.Constant(I32, slot * threads)) if slot else base, types[k],
                                   dtypes[k], results[k]) for k in range(len(dtypes))]
                for slot, r in enumerate(live)}

    def _group_member(self, base: ir.Value, warp_bits: list, member: int) -> ir.Value:
        """The thread at ``base``'s lane whose warp sits at position ``member`` of its group (bit
        ``j`` of ``member`` is warp bit ``warp_bits[j]``)."""
        offset = sum(32 << bit for j, bit in enumerate(warp_bits) if member >> j & 1)
        return self.b.or_(base, ir.Constant(I32, offset)) if offset else base

    def lower_reduce(self, op: Operation) -> None:
        """The interpreter's halving tree: at each level the elements whose index along the axis
        has the highest remaining bit set combine into their partners below, so both give the same
        bits. That bit is a register bit (in the thread), a warp bit (shared memory) or a lane bit
        (a butterfly shuffle); every thread ends with the results of its slice."""
        b = self.b
        axis = op.attrs["axis"]
        kind = op.attrs["kind"]
        inputs = list(op.operands)
        layout = self.some_layout(inputs[0])
        values = [self.regs(v, layout) for v in inputs]
        dtypes = [v.type.scalar for v in inputs]
        if kind in ("argmax", "argmin"):
            index = [self.element_index(layout, r)[axis] for r in range(layout.num_regs)]
            values.append(index)
            dtypes.append(T.int32)
        custom = self._custom_combine(op) if kind == "custom" else None
        combine = combining.combiner(b, kind, dtypes, custom, gpu_math.float_extremum)
        state = {r: [v[r] for v in values] for r in range(layout.num_regs)}
        bits = []
        for i, (dim, weight) in enumerate(layout.reg_bits):
            if dim == axis:
                bits.append((weight, "reg", i))
        for i, bit in enumerate(layout.lane_bits):
            if bit is not None and bit[0] == axis:
                bits.append((bit[1], "lane", i))
        for i, bit in enumerate(layout.warp_bits):
            if bit is not None and bit[0] == axis:
                bits.append((bit[1], "warp", i))
        levels = sorted(bits, reverse=True)
        k = 0
        while k < len(levels):
            weight, where, i = levels[k]
            if where == "reg":
                state = {r: combine(state[r], state[r | 1 << i]) for r in state if not r >> i & 1}
            elif where == "lane":
                ordered = kind not in combining.COMMUTATIVE  # else the same bits in either order
                right_side = b.icmp_unsigned("!=", b.and_(self.lane, ir.Constant(I32, 1 << i)),
                                             ir.Constant(I32, 0)) if ordered else None
                new = {}
                for r, mine in state.items():
                    other = [self.shuffle_xor(v, 1 << i) for v in mine]
                    if not ordered:
                        new[r] = combine(mine, other)
                        continue
                    left = [b.select(right_side, o, m) for m, o in zip(mine, other)]
                    right = [b.select(right_side, m, o) for m, o in zip(mine, other)]
                    new[r] = combine(left, right)
                state = new
            else:
                group = []
                while k < len(levels) and levels[k][1] == "warp":
                    group.append(levels[k][2])
                    k += 1
                across = self._reduce_across_warps_split if len(state) > 1 else self._reduce_across_warps
                state = across(state, dtypes, group, combine)
                continue
            k += 1
        outputs = [len(dtypes) - 1] if kind in ("argmax", "argmin") else list(range(len(op.results)))
        result_layout = L.sliced(layout, axis)
        live = sorted(state)
        for k, r in zip(outputs, op.results):
            if not _is_block(r):
                self.scalars[r.id] = state[live[0]][k]
            else:
                self.dist[r.id] = (result_layout, [state[q][k] for q in live])

    # scans: through shared memory, each line along the axis combined in order by one thread -------
    def lower_scan(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        reverse = bool(op.attrs.get("reverse", False))
        inputs = list(op.operands)
        layout = self.some_layout(inputs[0])
        shape = layout.shape
        dtypes = [v.type.scalar for v in inputs]
        numel = 1
        for n in shape:
            numel *= n
        bases = []
        total = 0
        for dtype in dtypes:
            bases.append(total)
            total += (numel * item_size(dtype) + 15) // 16 * 16
        self.reserve(total)
        self.barrier()
        for v, dtype, base in zip(inputs, dtypes, bases):
            self.write_block(layout, self.regs(v, layout), dtype, base)
        self.barrier()
        length = shape[axis]
        lines = numel // length
        stride = _row_major_strides(shape)[axis]
        custom = self._custom_combine(op) if op.attrs["kind"] == "custom" else None
        combine = combining.combiner(b, op.attrs["kind"], dtypes, custom, gpu_math.float_extremum)

        def line_body(line):
            # the first element of line ``line``: the line's index with the axis removed, spread back
            outer = b.udiv(line, ir.Constant(I32, stride))
            inner = b.urem(line, ir.Constant(I32, stride))
            first = b.add(b.mul(outer, ir.Constant(I32, stride * length)), inner)

            def position(k):
                step = (length - 1 - k) if reverse else k
                return b.add(first, ir.Constant(I32, step * stride)) if step else first

            carried = [self.smem_load(position(0), dtype, base) for dtype, base in zip(dtypes, bases)]

            def element(k, running):
                step = b.sub(ir.Constant(I32, length - 1), k) if reverse else k
                at = b.add(first, b.mul(step, ir.Constant(I32, stride)))
                current = [self.smem_load(at, dtype, base) for dtype, base in zip(dtypes, bases)]
                combined = combine(running, current)  # the running value, then the element: as the interpreter
                for value, dtype, base in zip(combined, dtypes, bases):
                    self.smem_store(at, value, dtype, base)
                return combined

            self.loop(ir.Constant(I32, 1), ir.Constant(I32, length), 1, carried, element)

        self.counted_loop(self.tid, ir.Constant(I32, lines), self.threads, line_body)
        self.barrier()
        for r, dtype, base in zip(op.results, dtypes, bases):
            values = [self.smem_load(self.linear_index(self.element_index(layout, q), shape), dtype, base)
                      for q in range(layout.num_regs)]
            self.dist[r.id] = (layout, values)

    def lower_sort(self, op: Operation) -> None:
        """The IR spec's bitonic network along the last dimension: at each step every element meets
        the one whose position differs in one bit, which lives in another register (same thread), in
        another lane (a shuffle) or another warp (shared memory)."""
        b = self.b
        value = op.operands[0]
        dtype = value.type.scalar
        layout = self.some_layout(value)
        values = list(self.regs(value, layout))
        last = layout.rank - 1
        n = layout.shape[last]
        descending = bool(op.attrs["descending"])
        positions = [self.element_index(layout, r)[last] for r in range(layout.num_regs)]
        stages = n.bit_length() - 1
        for stage in range(1, stages + 1):
            for step in range(stage - 1, -1, -1):
                partners = self.partner_values(layout, [[v] for v in values], last, 1 << step, [dtype])
                following = []
                for r, (own, position) in enumerate(zip(values, positions)):
                    partner = partners[r][0]
                    if stage == stages:
                        desc = ir.Constant(I1, int(descending))
                    else:
                        desc = b.trunc(b.lshr(position, ir.Constant(I32, stage)), I1)
                    is_right = b.icmp_unsigned("!=", b.and_(position, ir.Constant(I32, 1 << step)),
                                               ir.Constant(I32, 0))
                    take = b.xor(lanes.greater(self.b, own, partner, dtype), b.xor(desc, is_right))
                    following.append(b.select(take, partner, own))
                values = following
        self.dist[op.results[0].id] = (layout, values)

    def partner_values(self, layout: L.Layout, state: list, dim: int, weight: int, dtypes) -> list:
        """For each register, the values (a list per register) held for the element whose index along
        ``dim`` differs in the bit ``weight``."""
        for i, bit in enumerate(layout.reg_bits):
            if bit == (dim, weight):
                return [state[r ^ (1 << i)] for r in range(len(state))]
        for i, bit in enumerate(layout.lane_bits):
            if bit == (dim, weight):
                return [[self.shuffle_xor(v, 1 << i) for v in values] for values in state]
        for i, bit in enumerate(layout.warp_bits):
            if bit == (dim, weight):
                exchanged = self._exchange_warps(dict(enumerate(state)), dtypes, i)
                return [exchanged[r] for r in range(len(state))]
        raise AssertionError(f"no bit ({dim}, {weight}) in {layout}")
