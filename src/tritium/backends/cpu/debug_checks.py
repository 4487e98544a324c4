"""Debug mode in compiled code: the checks the interpreter's debug mode makes
(``interpreter/checks.py``), generated into a second variant of a kernel's module that debug-mode
launches run (``Codegen(debug=True)``; the launcher builds it on the first such launch).

- int32 ``add``/``sub``/``mul``/``neg`` whose exact result leaves int32, integer ``//``/``%`` by
  zero, float -> int casts of NaN, inf or out-of-range values: each such op's result is a buffer
  (placement.py), and its lanes are checked where it is computed, all of them, in order; the first
  bad lane fails the program with its operands in the error record.
- Data races: each pointer argument a store may write gets a shadow array of int32, one per
  element, holding 1 + the linear id of the program that last stored there (0: none), filled by the
  launcher (``launcher.Executable._shadow_slots``; arguments over the same memory share one). A
  store first checks every active lane (another program's tag there is a race; nothing is written
  yet), then writes its lanes and their tags. The variant runs its programs one at a time, in launch
  order (or TRITIUM_SHUFFLE's), so the first program to store is the one named first, as on the
  interpreter.

What stays the interpreter's: kernels whose programs synchronise through memory (locks, tickets:
their stores are ordered by acquire/release, which the interpreter follows with vector clocks),
and kernels with ``tl.multiple_of``/``max_contiguous``/``max_constancy`` hints or ``tl.assume``
(whose truth the interpreter checks; this backend never relies on them), and kernels that make
pointers from integers (which may reach tensors no argument names, whose shadows this variant has no
slot for). Their debug-mode launches run there.
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Value
from ...compiler.ir.spec import OVERFLOW_CHECKED, ZERO_DIVISOR_CHECKED, opcodes_with
from ..llvm import casts
from ..debug_reports import integer_range
from ..llvm.types import F64, I8, I32, I64, PTR, item_size
from ..reports import DIVISION_BY_ZERO, INT_OVERFLOW, INVALID_CONVERSION, RACE
from .values import _shape, row_major_strides

_OVERFLOW_CHECKED = opcodes_with(OVERFLOW_CHECKED)
_ZERO_DIVISOR_CHECKED = opcodes_with(ZERO_DIVISOR_CHECKED)


def checked_code(op: Operation):
    """The error-record code of the check debug mode makes on ``op``'s lanes, or None."""
    if op.opcode in _OVERFLOW_CHECKED and op.results[0].type.scalar.name == "int32":
        return INT_OVERFLOW
    if op.opcode in _ZERO_DIVISOR_CHECKED and op.operands[1].type.scalar.is_int() \
            and not op.results[0].type.scalar.is_floating():
        return DIVISION_BY_ZERO
    if op.opcode == "cast":
        source, target = op.operands[0].type.scalar, op.attrs["to"]
        if source.is_floating() and target.is_int() and not target.is_bool():
            return INVALID_CONVERSION
    return None


def stays_on_interpreter(fn: Function, program_order: bool) -> bool:
    """Whether debug mode's checks of ``fn`` are the interpreter's alone (see the module's text)."""
    return program_order or any(op.opcode in ("hint", "assume", "int_to_ptr") for op in fn.walk())


class DebugChecks:
    """The code generator's debug-mode rules (mixed into ``Codegen``; active when ``self.debug``)."""

    # arithmetic ------------------------------------------------------------------------------------
    def _lane_fault(self, op: Operation, code: int, idx) -> tuple:
        """(i1 bad, i64 value, i64 extra) of lane ``idx`` of ``op``: what the record of a bad lane holds
        (the operands of an overflow, the dividend, the float as fp64 bits)."""
        b = self.b
        if code == INT_OVERFLOW:
            x = b.sext(self.value_at(op.operands[0], idx), I64)
            if op.opcode == "neg":
                y = ir.Constant(I64, 0)
                exact = b.sub(y, x)
            else:
                y = b.sext(self.value_at(op.operands[1], idx), I64)
                exact = {"add": b.add, "sub": b.sub, "mul": b.mul}[op.opcode](x, y)
            return b.icmp_signed("!=", exact, b.sext(b.trunc(exact, I32), I64)), x, y
        if code == DIVISION_BY_ZERO:
            dividend, divisor = self.value_at(op.operands[0], idx), self.value_at(op.operands[1], idx)
            bad = b.icmp_unsigned("==", divisor, ir.Constant(divisor.type, 0))
            kind = op.operands[0].type.scalar
            if dividend.type.width < 64:
                signed = kind.is_int_signed() and not kind.is_bool()
                dividend = b.sext(dividend, I64) if signed else b.zext(dividend, I64)
            return bad, dividend, ir.Constant(I64, 0)
        source, target = op.operands[0].type.scalar, op.attrs["to"]
        wide = casts.to_arithmetic(b, self.value_at(op.operands[0], idx), source)
        if wide.type != F64:
            wide = b.fpext(wide, F64)
        low, high = integer_range(target)
        whole = casts._intrinsic(b, "llvm.trunc.f64", F64, [F64], [wide])
        # NaN fails every ordered comparison: bad unless low <= trunc(x) < high + 1
        inside = b.and_(b.fcmp_ordered(">=", whole, ir.Constant(F64, float(low))),
                        b.fcmp_ordered("<", whole, ir.Constant(F64, float(high) + 1.0)))
        return b.not_(inside), b.bitcast(wide, I64), ir.Constant(I64, 0)

    def check_lanes(self, op: Operation) -> None:
        """Debug mode's check of an elementwise op (``checked_code``), before its result is used: a
        scalar at once, a block over all its lanes (a loop without branches; the lanes again, in
        order, to find the first bad one only when there is one)."""
        code = checked_code(op)
        if code is None:
            return
        b = self.b
        shape = _shape(op.results[0].type)
        if not shape:
            bad, value, extra = self._lane_fault(op, code, ())
            self.if_then(bad, lambda: self.fail(code, ir.Constant(I64, -1), value, extra), rare=True)
            return
        strides = row_major_strides(shape)
        any_bad = self.flag(False)
        self.loop_nest(shape, lambda idx: b.store(b.or_(b.load(any_bad), self._lane_fault(op, code, idx)[0]),
                                                  any_bad))

        def first_bad_lane():
            def lane(idx):
                bad, value, extra = self._lane_fault(op, code, idx)
                self.if_then(bad, lambda: self.fail(code, self.linear(idx, strides), value, extra))

            self.loop_nest(shape, lane)
            b.ret(ir.Constant(I32, 1))  # not reached: some lane was bad

        with self.cold():
            self.if_then(b.load(any_bad), first_bad_lane)

    # races -------------------------------------------------------------------------------------------
    def load_shadows(self, argument) -> None:
        """Reads the shadow arrays' addresses (one argument-block slot per pointer argument, after the
        byte ranges; 0 for an argument no store writes) and works out this program's tag."""
        b = self.b
        first = len(self.fn.args) + 2 * len(self.pointer_args)
        self.shadows = [argument(first + n) for n in range(len(self.pointer_args))]
        gx, gy = (b.zext(n, I64) for n in self.nprogs[:2])
        x, y, z = (b.zext(p, I64) for p in self.pids)
        linear = b.add(x, b.mul(gx, b.add(y, b.mul(gy, z))))
        self.store_tag = b.trunc(b.add(linear, ir.Constant(I64, 1)), I32)
        self.spare_shadow = self.scalar_slot(I32)  # where an address no written argument holds is "recorded"
        b.store(ir.Constant(I32, 0), self.spare_shadow)

    def _shadow_slot(self, pointer: Value, address) -> ir.Value:
        """The shadow int32 of the element at ``address`` (a pointer) in the argument it lies in
        (known from the pointer's provenance, else found among the arguments stores may write; a
        slot of the program's own, never read, when none holds it)."""
        b = self.b
        at = b.ptrtoint(address, I64)
        source = self.provenance.get(pointer.id)
        candidates = [source] if source is not None and source >= 0 else list(self.written)
        slot = self.spare_shadow
        for position in candidates:
            low, high = self.bounds[position]
            size = item_size(self.fn.args[self.pointer_args[position]].type.element_ty)
            # the shadow's byte offset: 4 bytes per element of ``size`` bytes (addresses are aligned,
            # the bounds checks saw to it: exact, so a run's consecutive lanes have consecutive slots)
            offset = b.sub(at, low)
            if item_size(pointer.type.scalar.element_ty) != size:  # a cast pointer: the element it falls in
                offset = b.mul(b.udiv(offset, ir.Constant(I64, size)), ir.Constant(I64, 4))
            elif size < 4:
                offset = b.mul(offset, ir.Constant(I64, 4 // size))
            elif size > 4:
                offset = b.lshr(offset, ir.Constant(I64, (size // 4).bit_length() - 1), flags=["exact"])
            mine = b.gep(b.inttoptr(self.shadows[position], PTR), [offset], source_etype=I8)
            if len(candidates) == 1:
                return mine
            inside = b.and_(b.icmp_unsigned(">=", at, low), b.icmp_unsigned("<", at, high))
            slot = b.select(inside, mine, slot)
        return slot

    def _stored_by_another(self, pointer: Value, address) -> ir.Value:
        """i1: another program stored to the element at ``address`` earlier in the launch."""
        b = self.b
        previous = b.load(self._shadow_slot(pointer, address), typ=I32)
        return b.and_(b.icmp_unsigned("!=", previous, ir.Constant(I32, 0)),
                      b.icmp_unsigned("!=", previous, self.store_tag))

    def _fail_race(self, pointer: Value, idx, address) -> None:
        b = self.b
        shape = _shape(pointer.type)
        previous = b.load(self._shadow_slot(pointer, address), typ=I32)
        lane = self.linear(idx, row_major_strides(shape)) if shape else ir.Constant(I64, -1)
        self.if_then(self._stored_by_another(pointer, address),
                     lambda: self.fail(RACE, lane, b.ptrtoint(address, I64), b.zext(previous, I64)))

    def record_store(self, pointer: Value, address) -> None:
        """Leaves this program's tag in the shadow of the element a store just wrote."""
        self.b.store(self.store_tag, self._shadow_slot(pointer, address))

    def check_store_races(self, op: Operation, every) -> None:
        """Every active lane of the store ``op`` checked for a race, before any lane is written: a loop
        without branches over them, and only when it found one, the lanes again in order to report
        the first."""
        b = self.b
        pointer, mask = op.operand("pointer"), op.operand("mask")
        if not isinstance(pointer.type, T.block_type):
            address = self.value_at(pointer, ())
            race = self._stored_by_another(pointer, address)
            if mask is not None:
                race = b.and_(race, self.value_at(mask, ()))
            self.if_then(race, lambda: self._fail_race(pointer, (), address), rare=True)
            return
        found = self.flag(False)

        def lane(idx, address, masked):
            b.store(b.or_(b.load(found), self._stored_by_another(pointer, address)), found)

        self.access_nest(pointer, every, mask, lane)

        def first_race():
            self.access_nest(pointer, every, mask, lambda idx, address, masked: self._fail_race(pointer, idx, address))
            b.ret(ir.Constant(I32, 1))  # not reached: some lane raced

        with self.cold():
            self.if_then(b.load(found), first_race)
