"""Where each block value of a kernel lives on the CPU (docs/cpu-backend.md, "Placement").

The code generator decides before lowering which block values are lazy (evaluated lane by lane in
the loop of the op that reads them), which are buffers, which loads are read inside the loop of the
store they feed, and which dot operands are kept packed.
"""
from __future__ import annotations

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Region, Value
from ..llvm import scalar as lanes
from .values import _CHEAP


class Placement:
    def _count_uses(self, region: Region, depth: int, defined_depth: dict) -> None:
        for arg in region.args:
            defined_depth[arg.id] = depth
        for op in region.ops:
            for operand in op.operands:
                weight = 1 if defined_depth.get(operand.id, 0) == depth else 2  # used inside a loop/branch: twice
                self.uses[operand.id] = self.uses.get(operand.id, 0) + weight
            for inner in op.regions:
                self._count_uses(inner, depth + 1, defined_depth)
            for r in op.results:
                defined_depth[r.id] = depth

    def _find_fusable_loads(self, region: Region) -> None:
        """Loads that a store can read in its own loop: block loads all of whose uses are in the
        stored value's computation (``_lane_chain``), with nothing between the load and the store
        that writes memory or synchronizes (the store's check decides at run time whether the bytes
        may overlap); and the values of those computations, which need no buffer."""
        from ...compiler.ir.spec import has_effects

        pending: list[Operation] = []
        for op in region.ops:
            for inner in op.regions:
                self._find_fusable_loads(inner)
            if op.opcode == "load":
                result = op.results[0]
                if isinstance(result.type, T.block_type) and not op.attrs.get("volatile", False):
                    pending.append(op)
                continue
            if op.opcode == "store" and isinstance(op.operands[0].type, T.block_type):
                reached = self._lane_chain(op.operand("value"))
                self.lane_local |= reached
                fused = [load.results[0] for load in pending if load.results[0].id in reached]
                for v in fused:
                    self.deferrable.add(v.id)
                if fused:
                    self.fused_into[id(op)] = fused
                pending = []
                continue
            if has_effects(op):
                pending = []

    def _find_packed_loads(self, region: Region) -> None:
        """Block loads whose only reader is a ``dot`` that would convert them on a copy (fp16, bf16,
        fp8 or int8 widened, fp32 truncated to tf32): the load writes its buffer converted, and the
        dot uses it as it is (one pass over the tile instead of two)."""
        from . import dot

        for op in region.ops:
            for inner in op.regions:
                self._find_packed_loads(inner)
            if op.opcode != "dot":
                continue
            for name in ("a", "b"):
                operand = op.operand(name)
                load = operand.owner
                if load is None or load.opcode != "load" or self.uses.get(operand.id) != 1 or \
                        load.attrs.get("volatile", False) or operand.id in self.deferrable:
                    continue
                form = dot.packed_form(op, operand.type.scalar)
                if form is not None:
                    self.packed_loads[operand.id] = form

    def _lane_chain(self, value: Value) -> set[int]:
        """Ids of the values the stored ``value`` is computed from through lazily evaluated
        elementwise ops, every use of which is inside that computation (``value`` itself included):
        a lane of each is computed once, where that lane of ``value`` is, so none needs a buffer and
        a load among them can be read inside the store's loop (``x * x`` reads ``x`` once per lane)."""
        if self.uses.get(value.id, 0) != 1:  # also used elsewhere: computed (and buffered) where it is defined
            return set()
        operands: dict[int, list[int]] = {}  # id of a value in the computation -> its op's block operands
        stack = [value]
        seen = {value.id}
        while stack:
            v = stack.pop()
            op = v.owner
            if op is None or op.opcode not in lanes.LOWER or op.opcode == "philox":
                continue
            operands[v.id] = [o.id for o in op.operands if isinstance(o.type, T.block_type)]
            for operand in op.operands:
                if isinstance(operand.type, T.block_type) and operand.id not in seen:
                    seen.add(operand.id)
                    if operand.owner is not None and operand.owner.opcode != "load":
                        stack.append(operand)
        inside = {value.id}
        grown = True
        while grown:  # add the values all of whose uses are by values inside
            grown = False
            counts: dict[int, int] = {}
            for vid in inside:
                for operand in operands.get(vid, ()):
                    counts[operand] = counts.get(operand, 0) + 1
            for vid, count in counts.items():
                if vid not in inside and count == self.uses.get(vid, 0):
                    inside.add(vid)
                    grown = True
        return inside

    def _needs_buffer(self, op: Operation) -> bool:
        if op.opcode in _CHEAP or op.results[0].id in self.lane_local:
            return False
        result = op.results[0]
        scalar = result.type.scalar
        index_like = not scalar.is_floating() and op.opcode not in ("libdevice",)
        if index_like and op.opcode not in ("floordiv", "mod", "umulhi"):
            return False
        return self.uses.get(result.id, 0) >= 2
