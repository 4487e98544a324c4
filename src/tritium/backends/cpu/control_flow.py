"""``if``, ``for`` and ``while`` on the CPU: carried values in slots (buffers for blocks, phis for
scalars), pointer blocks advanced by an offset, and the watch for a ``while`` loop that repeats
itself exactly (a spin wait no program can release).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Value
from ..llvm import scalar as lanes
from ..llvm.counted_for import CountedFor
from ..llvm.types import I64, register_type
from ..reports import ENDLESS_LOOP as ERROR_ENDLESS_LOOP
from .values import Buffer, _shape


class ControlFlow:
    # control flow ------------------------------------------------------------------------------------
    def _bind(self, value: Value, lowered) -> None:
        if isinstance(lowered, Buffer):
            self.buffers[value.id] = lowered
        else:
            self.scalars[value.id] = lowered

    def _carried_slots(self, values):
        """For each carried value: a Buffer (blocks) or None (scalars, carried in phis)."""
        return [self.new_buffer(v.type.scalar, _shape(v.type)) if isinstance(v.type, T.block_type) else None
                for v in values]

    def _copy_into(self, slots, values) -> None:
        """Writes block ``values`` into their ``slots`` buffers as if all were read before any is
        written: lazy values (which may read a slot) are staged in temporaries first; values in
        buffers other than the slots are copied directly."""
        slot_pointers = {id(slot.pointer) for slot in slots if slot is not None}
        reads = [self._slot_reads(v, slot_pointers) if slot is not None and v.id not in self.buffers else None
                 for slot, v in zip(slots, values)]
        staged, in_place = [], []
        for position, (slot, v) in enumerate(zip(slots, values)):
            if slot is None:
                continue
            source = self.buffers.get(v.id)
            if source is not None and source.pointer is slot.pointer and source.strides == slot.strides:
                continue
            if source is not None and id(source.pointer) not in slot_pointers:
                staged.append((slot, source))
                continue
            found = reads[position]
            if found is not None and found[1] and found[0] <= {id(slot.pointer)} and not any(
                    other is not None and id(slot.pointer) in other[0]
                    for i, other in enumerate(reads) if i != position):
                # a lane of v reads only the same lane of its own slot, and no other value reads that
                # slot: v is computed straight into it (a loop-carried accumulator, acc += x)
                in_place.append((slot, v))
                continue
            temp = self.new_buffer(v.type.scalar, slot.shape)
            self.fill(temp, v)
            staged.append((slot, temp))
        for slot, v in in_place:
            self.fill(slot, v)
        for slot, temp in staged:
            self.loop_nest(slot.shape, lambda idx, slot=slot, temp=temp: self.store_buffer(
                slot, idx, self.load_buffer(temp, idx)))

    def _slot_reads(self, v: Value, slot_pointers: set) -> Optional[tuple[set, bool]]:
        """For a lazy block ``v`` about to be written into a carried value's buffer: (the ids of the
        pointers of the buffers among ``slot_pointers`` it reads, whether each such read is of the
        lane being computed: elementwise ops all the way down), or None when it reads something this
        cannot follow (a load fused into a store's loop)."""
        found, same_lane = set(), True
        stack, seen = [(v, True)], set()
        while stack:
            u, lane = stack.pop()
            if not isinstance(u.type, T.block_type) or (u.id, lane) in seen:
                continue
            seen.add((u.id, lane))
            buffer = self.buffers.get(u.id)
            if buffer is not None:
                if id(buffer.pointer) in slot_pointers:
                    found.add(id(buffer.pointer))
                    same_lane = same_lane and lane
                continue
            if u.id in self.advanced:
                stack.append((self.advanced[u.id][0], lane))
                continue
            op = u.owner
            if op is None or u.id in self.deferred:
                return None
            keeps_lane = op.opcode in lanes.LOWER or op.opcode == "hint"
            stack.extend((o, lane and keeps_lane) for o in op.operands)
        return found, same_lane

    def lower_if(self, op: Operation) -> None:
        b = self.b
        condition = self.scalars[op.operands[0].id]
        slots = self._carried_slots(op.results)
        then_bb = self.function.append_basic_block("if_then")
        else_bb = self.function.append_basic_block("if_else")
        after = self.function.append_basic_block("if_end")
        b.cbranch(condition, then_bb, else_bb)
        incoming = []
        for block, region in ((then_bb, op.regions[0]), (else_bb, op.regions[1] if len(op.regions) > 1 else None)):
            b.position_at_end(block)
            saved = dict(self.memo)
            values = []
            if region is not None:
                terminator = self.lower_region(region)
                values = list(terminator.operands) if terminator is not None else []
            if values:
                self._copy_into(slots, values)
            scalars = [self.value_at(v, ()) if s is None else None for s, v in zip(slots, values)]
            self.memo = saved
            if not b.block.is_terminated:
                incoming.append((b.block, scalars))
                b.branch(after)
        b.position_at_end(after)
        for i, r in enumerate(op.results):
            if slots[i] is not None:
                self.buffers[r.id] = slots[i]
            else:
                phi = b.phi(register_type(r.type))
                for block, scalars in incoming:
                    phi.add_incoming(scalars[i], block)
                self.scalars[r.id] = phi

    def _advanced_pointers(self, carried, yields) -> dict:
        """Positions of carried pointer blocks that each iteration advances by a scalar (``p += s``):
        position -> the scalar offset Value. Such a block is carried as one i64 element offset from its
        initial value instead of a buffer of pointers."""
        found = {}
        for i, (arg, y) in enumerate(zip(carried, yields)):
            if not (isinstance(arg.type, T.block_type) and isinstance(arg.type.scalar, T.pointer_type)):
                continue
            op = y.owner
            if op is None or op.opcode != "addptr" or op.operands[0] is not arg:
                continue
            offset = op.operands[1].owner
            if offset is not None and offset.opcode == "splat":
                found[i] = offset.operands[0]
        return found

    def _enter_loop(self, slots, args, inits, pre, advanced=()) -> list:
        """At a loop header: binds each carried region argument (a phi for scalars and, for pointer
        blocks in ``advanced``, an i64 element offset from the initial value; its buffer for other
        blocks) and returns the phis, None where the value lives in a buffer."""
        b = self.b
        phis = []
        for i, (slot, arg, init) in enumerate(zip(slots, args, inits)):
            if i in advanced:
                phi = b.phi(I64)
                phi.add_incoming(ir.Constant(I64, 0), pre)
                self.advanced[arg.id] = (init, phi)
            elif slot is None:
                phi = b.phi(register_type(arg.type))
                phi.add_incoming(self.scalars[init.id], pre)
                self.scalars[arg.id] = phi
            else:
                phi = None
                self.buffers[arg.id] = slot
            phis.append(phi)
        return phis

    def lower_for(self, op: Operation) -> None:
        b = self.b
        lower, upper, step = (self.scalars[v.id] for v in op.operands[:3])
        inits = op.operands[3:]
        body = op.regions[0]
        carried = body.args[1:]
        terminator_op = body.terminator
        advanced = self._advanced_pointers(carried, terminator_op.operands if terminator_op is not None else [])
        slots = [None if i in advanced else slot for i, slot in enumerate(self._carried_slots(carried))]
        self._copy_into(slots, inits)
        loop = CountedFor(b, self.function, lower)
        phis = self._enter_loop(slots, carried, inits, loop.pre, advanced)
        loop.enter_body(upper, step, op.operands[0].type.is_int_signed())
        self.scalars[body.args[0].id] = loop.iv
        saved = dict(self.memo)
        terminator = self.lower_region(body)
        yields = list(terminator.operands) if terminator is not None else []
        self._copy_into(slots, yields)
        scalar_next = []
        for i, (slot, v) in enumerate(zip(slots, yields)):
            if i in advanced:
                amount = self.scalars[advanced[i].id]
                source = advanced[i].type
                if amount.type.width < 64:
                    amount = b.sext(amount, I64) if source.is_int_signed() else b.zext(amount, I64)
                scalar_next.append(b.add(phis[i], amount))
            else:
                scalar_next.append(self.value_at(v, ()) if slot is None else None)
        self.memo = saved
        latch = loop.step(step)
        for phi, value in zip(phis, scalar_next):
            if phi is not None:
                phi.add_incoming(value, latch)
        loop.leave()
        for i, (r, slot, phi) in enumerate(zip(op.results, slots, phis)):
            if i in advanced:
                self.advanced[r.id] = (inits[i], phi)
            elif slot is not None:
                self.buffers[r.id] = slot
            else:
                self.scalars[r.id] = phi

    def lower_while(self, op: Operation) -> None:
        b = self.b
        before, after = op.regions
        inits = op.operands
        slots = self._carried_slots(before.args)
        self._copy_into(slots, inits)
        pre = b.block
        header = self.function.append_basic_block("while_before")
        after_bb = self.function.append_basic_block("while_after")
        exit_bb = self.function.append_basic_block("while_end")
        b.branch(header)
        b.position_at_end(header)
        phis = self._enter_loop(slots, before.args, inits, pre)
        watched = self.checks and self._watches_for_repeats(op, slots)
        if watched:
            count = b.phi(I64)
            count.add_incoming(ir.Constant(I64, 0), pre)
        saved = dict(self.memo)
        condition_op = self.lower_region(before)
        condition = self.value_at(condition_op.operands[0], ())
        passed = condition_op.operands[1:]
        pass_slots = self._carried_slots(passed)
        self._copy_into(pass_slots, passed)
        passed_scalars = [self.value_at(v, ()) if s is None else None for s, v in zip(pass_slots, passed)]
        self.memo = saved
        b.cbranch(condition, after_bb, exit_bb)
        b.position_at_end(after_bb)
        for arg, slot, value in zip(after.args, pass_slots, passed_scalars):
            self._bind(arg, slot if slot is not None else value)
        saved = dict(self.memo)
        terminator = self.lower_region(after)
        yields = list(terminator.operands) if terminator is not None else []
        self._copy_into(slots, yields)
        scalar_next = [self.value_at(v, ()) if s is None else None for s, v in zip(slots, yields)]
        self.memo = saved
        if watched:
            self.current = op  # the error names the while loop's line
            self._fail_if_repeated(count, phis, scalar_next)
        latch = b.block
        for phi, value in zip(phis, scalar_next):
            if phi is not None:
                phi.add_incoming(value, latch)
        if watched:
            count.add_incoming(b.add(count, ir.Constant(I64, 1)), latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for r, slot, value in zip(op.results, pass_slots, passed_scalars):
            self._bind(r, slot if slot is not None else value)

    def _watches_for_repeats(self, op: Operation, slots) -> bool:
        """A ``while`` loop that carries scalars only and touches no memory: if one iteration leaves
        every carried value as it was, every later one does too, and the loop never ends (a GPU would
        hang; the interpreter raises DeadlockError, and so does this backend). Loops that read or
        write memory are not watched: their next iteration may differ."""
        from ...compiler.ir.spec import has_effects

        if any(slot is not None for slot in slots):
            return False
        return not any(has_effects(inner) for region in op.regions for inner in region.ops)

    def _fail_if_repeated(self, count, before, after) -> None:
        """From iteration ``spin_check_after`` on: the program fails (``ENDLESS_LOOP``) when the
        carried values ``after`` this iteration are those ``before`` it, bit for bit."""
        b = self.b
        same = b.icmp_unsigned(">=", count, self.spin_check_after)
        for old, new in zip(before, after):
            if isinstance(old.type, (ir.FloatType, ir.DoubleType, ir.HalfType)):
                width = ir.IntType(64 if isinstance(old.type, ir.DoubleType) else
                                   32 if isinstance(old.type, ir.FloatType) else 16)
                old, new = b.bitcast(old, width), b.bitcast(new, width)
            elif isinstance(old.type, ir.PointerType):
                old, new = b.ptrtoint(old, I64), b.ptrtoint(new, I64)
            same = b.and_(same, b.icmp_unsigned("==", old, new))
        with self.cold():
            self.if_then(same, lambda: self.fail(ERROR_ENDLESS_LOOP, ir.Constant(I64, 0), count))

    # cross-lane ops ----------------------------------------------------------------------------------
