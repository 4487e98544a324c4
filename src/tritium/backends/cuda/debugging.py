"""What a kernel reports while it runs: debug mode's bounds checks, ``device_assert``, the error
record of the first failure of a launch (``backends/reports.py``, read by the launcher) and
``device_print`` through ``vprintf``.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.ir.ops import Operation, Value
from .. import reports
from ..llvm import casts
from ..llvm.types import F64, I1, I8, I32, I64, PTR, item_size
from .values import GLOBAL, GLOBAL_PTR, _is_block, _shape


class Debugging:
    """Bounds checks, failure records, asserts and prints."""

    # run-time failures: the first one of the launch is recorded, the access it guards is skipped --
    def checked(self, pointer: Value, address: ir.Value, lane: ir.Value, active: Optional[ir.Value]):
        """Debug mode: whether ``address`` (of an element of ``pointer``) lies inside the tensor it
        derives from (any pointer argument's when that is not known); a bad active lane is recorded.
        Returns the predicate the access runs under (None: unconditionally)."""
        if not self.checks:
            return active
        b = self.b
        size = item_size(pointer.type.scalar.element_ty)
        at = b.ptrtoint(address, I64)
        end = b.add(at, ir.Constant(I64, size))
        source = self.provenance.get(pointer.id)
        ranges = [self.bounds[source]] if source is not None and source >= 0 else self.bounds
        inside = ir.Constant(I1, 0)
        for low, high in ranges:
            inside = b.or_(inside, b.and_(b.icmp_unsigned(">=", at, low), b.icmp_unsigned("<=", end, high)))
        aligned = b.icmp_unsigned("==", b.and_(at, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
        ok = b.and_(inside, aligned)
        bad = b.not_(ok) if active is None else b.and_(active, b.not_(ok))
        self.fail(bad, reports.OUT_OF_BOUNDS, lane, at, ir.Constant(I64, 0))
        return ok if active is None else b.and_(active, ok)

    def fail(self, predicate: ir.Value, code: int, lane: ir.Value, value: ir.Value, extra: ir.Value) -> None:
        """Where ``predicate`` holds, records (once per launch: the first program to fail wins) the
        failure of the current op at block element ``lane``."""
        b = self.b
        op_index = self.op_index[id(self.current)]

        def record():
            slot0 = self.record
            pair = b.cmpxchg(slot0, ir.Constant(I64, 0), ir.Constant(I64, code), 'syncscope("device") monotonic',
                             "monotonic")
            won = b.extract_value(pair, 1)

            def fill():
                fields = [ir.Constant(I64, op_index)] + [
                    b.zext(self._sreg(self.b, f"ctaid.{axis}"), I64) for axis in "xyz"] + [
                    b.zext(lane, I64) if lane.type.width < 64 else lane,
                    value if value.type == I64 else b.sext(value, I64), extra]
                for slot, field in enumerate(fields, start=1):
                    b.store(field, b.gep(slot0, [ir.Constant(I32, slot)], source_etype=I64), align=8)

            self._guarded(won, lambda: fill() and None)

        self._guarded(predicate, record)

    def lower_assert(self, op: Operation) -> None:
        if op.attrs.get("debug_only") and not self.checks:
            return
        b = self.b
        condition = op.operands[0]
        if not _is_block(condition):
            self.fail(b.not_(self._truth(self.scalar(condition), condition.type)), reports.ASSERT,
                      ir.Constant(I32, 0), ir.Constant(I64, 0), ir.Constant(I64, 0))
            return
        layout = self.some_layout(condition)
        values = self.regs(condition, layout)
        for r, value in enumerate(values):
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(b.not_(self._truth(value, condition.type.scalar)), reports.ASSERT, lane,
                      ir.Constant(I64, 0), ir.Constant(I64, 0))

    def lower_assume(self, op: Operation) -> None:
        """A scalar condition becomes ``llvm.assume`` (LLVM may simplify with it, as the axis analysis
        already did); a block's lanes are left alone."""
        condition = op.operands[0]
        if not _is_block(condition):
            truth = self._truth(self.scalar(condition), condition.type)
            self.intrinsic("llvm.assume", ir.VoidType(), [truth])

    def _truth(self, value: ir.Value, dtype) -> ir.Value:
        if value.type == I1:
            return value
        if isinstance(value.type, ir.IntType):
            return self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        return self.b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))

    # device_print through vprintf: one line per element and operand, in the interpreter's format --
    def lower_print(self, op: Operation) -> None:
        b = self.b
        prefix = op.attrs["prefix"].strip()
        label = f" {prefix}" if prefix else ":"
        hex_format = bool(op.attrs.get("hex", False))
        pid = [self._sreg(b, f"ctaid.{axis}") for axis in "xyz"]
        if not op.operands:
            self._guarded(self.first_thread(), lambda: self._printf(
                "pid (%d, %d, %d) " + prefix.replace("%", "%%") + "\n", pid) and None)
            return
        shape = _shape(op.operands[0].type)
        layout = self.some_layout(op.operands[0]) if shape else None
        count = layout.num_regs if layout is not None else 1
        operands = [self.regs(v, layout) if layout is not None else [self.scalar(v)] for v in op.operands]
        owner = self.owner(layout) if layout is not None else self.first_thread()
        widths = [len(str(max(0, n - 1))) for n in shape]
        index_format = ", ".join(f"%{w}d" for w in widths)
        safe_label = label.replace("%", "%%")
        for r in range(count):
            index = self.element_index(layout, r) if layout is not None else []
            for n, (value, values) in enumerate(zip(op.operands, operands)):
                operand = f" (operand {n})" if len(op.operands) > 1 else ""
                spec, arg = self._print_spec(values[r], value.type.scalar, hex_format)
                text = f"pid (%d, %d, %d) idx ({index_format}){safe_label}{operand} {spec}\n"
                self._guarded(owner, lambda text=text, index=index, arg=arg: self._printf(text, pid + index + [arg])
                              and None)

    def _print_spec(self, value, dtype, hex_format: bool):
        b = self.b
        if dtype.is_ptr():
            return "0x%llx", b.ptrtoint(value, I64)
        if hex_format:
            bits = dtype.primitive_bitwidth if not dtype.is_bool() else 8
            raw = value if isinstance(value.type, ir.IntType) else b.bitcast(value, ir.IntType(bits))
            if raw.type.width < 32:
                raw = b.zext(raw, I32)
            return (f"0x%0{bits // 4}llx", b.zext(raw, I64)) if bits == 64 else (f"0x%0{max(2, bits // 4)}x", raw)
        if dtype.is_floating():
            wide = casts.to_arithmetic(b, value, dtype)
            return "%f", wide if wide.type == F64 else b.fpext(wide, F64)
        if value.type == I1 or dtype.is_bool():
            return "%d", b.zext(value, I32)
        signed = dtype.is_int_signed()
        if value.type.width == 64:
            return ("%lld" if signed else "%llu"), value
        if value.type.width < 32:
            value = b.sext(value, I32) if signed else b.zext(value, I32)
        return ("%d" if signed else "%u"), value

    def _printf(self, text: str, args: list) -> None:
        b = self.b
        data = bytearray(text.encode()) + b"\0"
        name = f"tritium_format_{len([g for g in self.module.global_values if g.name.startswith('tritium_format_')])}"
        fmt = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)), name, addrspace=GLOBAL)
        fmt.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        fmt.global_constant = True
        fmt.linkage = "internal"
        fmt.type = GLOBAL_PTR
        fmt_generic = b.addrspacecast(fmt, PTR)
        struct = ir.LiteralStructType([a.type for a in args])
        buffer = self.entry.alloca(struct)
        buffer.type = PTR  # opaque, as LLVM's IR has it
        for i, a in enumerate(args):
            b.store(a, b.gep(buffer, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=struct))
        vprintf = self.module.globals.get("vprintf")
        if vprintf is None:
            vprintf = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR]), "vprintf")
        b.call(vprintf, [fmt_generic, buffer])
