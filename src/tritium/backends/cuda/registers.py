"""Where block values live: a thread's registers of each value in a layout (``layouts.py``).

A scalar is one LLVM value every thread computes; a block value is either *materialized* -- a layout
and the registers this thread holds in it -- or *recomputed*: index arithmetic (``arange``, splats,
constants, broadcasts, reshapes, permutes and elementwise chains of them) evaluated by each consumer
in the layout it needs. ``regs(v, L)`` gives the registers of ``v`` in layout ``L``: a recomputed
value is evaluated there, a materialized one renamed when every thread already holds what ``L`` asks
for, else moved through shared memory (``SharedMemory.convert``).

The rules here are those of the ops that only say where values live (views, splits, joins) and the
elementwise ops, one lane at a time (``lane_op``).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.ir.ops import Operation, Value
from ..llvm import scalar as lanes
from ..llvm.types import I32, constant
from . import layouts as L
from . import math as gpu_math
from .values import _is_block, _map_offset, _shape


class Registers:
    """Layouts, registers and the ops that only move values between them."""

    # layouts --------------------------------------------------------------------------------------
    def thread_index(self, layout: L.Layout, dim: int) -> ir.Value:
        """This thread's index along ``dim`` in ``layout``, without the register offsets (i32)."""
        key = (layout.lane_bits, layout.warp_bits, dim)
        found = self._thread_index.get(key)
        if found is not None:
            return found
        e = self.entry
        total = ir.Constant(I32, 0)
        for source, bits in ((self.lane, layout.lane_bits), (self.warp, layout.warp_bits)):
            for i, bit in enumerate(bits):
                if bit is None or bit[0] != dim:
                    continue
                set_ = e.and_(e.lshr(source, ir.Constant(I32, i)), ir.Constant(I32, 1))
                total = e.or_(total, e.shl(set_, ir.Constant(I32, L.log2(bit[1]))))
        self._thread_index[key] = total
        return total

    def element_index(self, layout: L.Layout, r: int) -> list:
        """Register ``r``'s index along each dimension (i32)."""
        offsets = layout.offsets[r]
        return [self.b.or_(self.thread_index(layout, d), ir.Constant(I32, offsets[d])) if offsets[d]
                else self.thread_index(layout, d) for d in range(layout.rank)]

    def lane_number(self, layout: L.Layout, r: int) -> ir.Value:
        return self.linear_index(self.element_index(layout, r), layout.shape)

    def owner(self, layout: L.Layout) -> Optional[ir.Value]:
        """True in the one thread of each replicated group that writes (None: no replication)."""
        lanes_mask, warps_mask = layout.replica_masks()
        if not lanes_mask and not warps_mask:
            return None
        e = self.entry
        bits = e.or_(e.and_(self.lane, ir.Constant(I32, lanes_mask)),
                     e.shl(e.and_(self.warp, ir.Constant(I32, warps_mask)), ir.Constant(I32, 5)))
        return e.icmp_unsigned("==", bits, ir.Constant(I32, 0))

    def first_thread(self) -> ir.Value:
        return self.entry.icmp_unsigned("==", self.tid, ir.Constant(I32, 0))

    # scopes ---------------------------------------------------------------------------------------
    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def regs(self, v: Value, layout: L.Layout) -> list:
        """The registers of block value ``v`` in ``layout`` (a scalar: that value in every register)."""
        if not _is_block(v):
            return [self.scalar(v)] * layout.num_regs
        key = (v.id, layout)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        result = self._regs(v, layout)
        self.scopes[-1][key] = result
        return result

    def layout_of(self, v: Value) -> Optional[L.Layout]:
        found = self.dist.get(v.id)
        return found[0] if found is not None else None

    def _regs(self, v: Value, layout: L.Layout) -> list:
        found = self.dist.get(v.id)
        if found is not None:
            own, values = found
            if own == layout:
                return values
            if L.same_threads(own, layout):
                return [values[own.register_of[o]] for o in layout.offsets]
            return self.convert(own, values, layout, v.type.scalar)
        op = v.owner
        if op is None:
            raise AssertionError(f"block value {v} was never lowered")
        return self.recompute(op, v, layout)

    def recompute(self, op: Operation, v: Value, layout: L.Layout) -> list:
        b = self.b
        n = layout.num_regs
        opcode = op.opcode
        if opcode == "arange":
            base = self.thread_index(layout, 0)
            start = op.attrs["start"]
            return [b.add(b.or_(base, ir.Constant(I32, o[0])) if o[0] else base, ir.Constant(I32, start))
                    if start else (b.or_(base, ir.Constant(I32, o[0])) if o[0] else base) for o in layout.offsets]
        if opcode == "constant":
            return [constant(v.type.scalar, op.attrs["value"])] * n
        if opcode == "splat":
            return [self.scalar(op.operands[0])] * n
        if opcode == "hint":
            return self.regs(op.operands[0], layout)
        if opcode in ("broadcast", "reshape", "permute"):
            source = op.operands[0]
            source_shape = _shape(source.type)
            if opcode == "broadcast":
                bit_map = L.broadcast_source(source_shape)
            elif opcode == "reshape":
                bit_map = L.reshape_source(layout.shape, source_shape)
            else:
                bit_map = L.permute_source(tuple(op.attrs["order"]))
            view = L.source_layout(layout, source_shape, bit_map)
            values = self.regs(source, view)
            return [values[view.register_of[_map_offset(o, bit_map, len(source_shape))]] for o in layout.offsets]
        if opcode == "join":
            rank = layout.rank
            view = L.map_bits(layout, layout.shape[:-1], lambda d, w: None if d == rank - 1 else (d, w))
            lhs, rhs = self.regs(op.operands[0], view), self.regs(op.operands[1], view)
            last = self.thread_index(layout, rank - 1)
            out = []
            for o in layout.offsets:
                k = view.register_of[o[:-1]]
                if o[-1]:
                    out.append(rhs[k])
                elif any(bit is not None and bit[0] == rank - 1 for bit in layout.lane_bits + layout.warp_bits):
                    out.append(b.select(b.icmp_unsigned("!=", last, ir.Constant(I32, 0)), rhs[k], lhs[k]))
                else:
                    out.append(lhs[k])
            return out
        if opcode in self.lane_rules:
            operands = [self.regs(o, layout) if _is_block(o) else [self.scalar(o)] * n for o in op.operands]
            results = [self.lane_op(op, [ops[r] for ops in operands]) for r in range(n)]
            index = op.results.index(v)
            return [r[index] if isinstance(r, list) else r for r in results]
        raise AssertionError(f"{opcode} is not recomputed")

    def scalar(self, v: Value) -> ir.Value:
        return self.scalars[v.id]

    def lane_op(self, op: Operation, args: list):
        """One lane of elementwise ``op`` on operand lanes ``args``: by math.py's rule (given the code
        generator) where it has one, else by scalar.py's (given the builder)."""
        if op.opcode in gpu_math.LOWER:
            return gpu_math.LOWER[op.opcode](self, op, args)
        return lanes.lower_op(self.b, op, args)

    # elementwise ops and views --------------------------------------------------------------------
    def lower_lanes(self, op: Operation) -> None:
        """An elementwise op: a scalar computed at once; a block materialized in the layout of its first
        materialized operand, or left to be recomputed by its consumers where none is."""
        if not any(_is_block(r) for r in op.results):
            result = self.lane_op(op, [self.scalar(o) for o in op.operands])
            for r, value in zip(op.results, result if isinstance(result, list) else [result]):
                self.scalars[r.id] = value
            return
        blocks = [o for o in op.operands if _is_block(o)]
        layout = next((self.layout_of(o) for o in blocks if self.layout_of(o) is not None), None)
        if layout is None:
            return  # recomputed by its consumers
        self.materialize(op, layout)

    def materialize(self, op: Operation, layout: L.Layout) -> None:
        for r in op.results:
            self.dist[r.id] = (layout, self.recompute(op, r, layout))

    def lower_arange(self, op: Operation) -> None:
        pass  # recomputed by its consumers

    def lower_constant(self, op: Operation) -> None:
        if not _is_block(op.results[0]):
            self.scalars[op.results[0].id] = constant(op.results[0].type, op.attrs["value"])

    def lower_splat(self, op: Operation) -> None:
        pass  # recomputed by its consumers

    def lower_hint(self, op: Operation) -> None:
        source = op.operands[0]
        if not _is_block(source):
            self.scalars[op.results[0].id] = self.scalar(source)
        elif source.id in self.dist:
            self.dist[op.results[0].id] = self.dist[source.id]

    def lower_broadcast(self, op: Operation) -> None:
        pass  # recomputed by its consumers: a view of the operand's registers where they agree

    def lower_permute(self, op: Operation) -> None:
        pass

    def lower_join(self, op: Operation) -> None:
        pass

    def lower_reshape(self, op: Operation) -> None:
        result, source = op.results[0], op.operands[0]
        if not _is_block(result):  # reshape to (): the one element
            self.scalars[result.id] = self.regs(source, self.some_layout(source))[0]

    def lower_split(self, op: Operation) -> None:
        source = op.operands[0]
        shape = _shape(op.results[0].type)
        layout = self.default_layout(shape) if shape else None
        rank = len(shape)
        if layout is None:  # a block of two elements into two scalars
            pair = L.Layout((2,), ((0, 1),), (None,) * 5, (None,) * L.log2(self.num_warps))
            values = self.regs(source, pair)
            self.scalars[op.results[0].id], self.scalars[op.results[1].id] = values
            return
        wide = L.Layout(shape + (2,), ((rank, 1),) + layout.reg_bits, layout.lane_bits, layout.warp_bits)
        values = self.regs(source, wide)
        for half, r in enumerate(op.results):
            self.dist[r.id] = (layout, [values[wide.register_of[o + (half,)]] for o in layout.offsets])
