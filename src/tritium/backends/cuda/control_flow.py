"""Control flow: code run where a predicate holds, counted loops of the generator's own, and the
``for``, ``while`` and ``if`` ops, whose carried values keep one layout across iterations (a phi per
register): the one the layouts pass gave a ``for``'s body argument, else the one the rules of
``assign.Choices._carried_layouts`` choose.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.analysis.effects import spins_on_memory
from ...compiler.ir.ops import Operation, Value
from ..llvm.counted_for import CountedFor
from ..llvm.types import I32


class ControlFlow:
    """Guarded code, loops and the control-flow ops."""

    def _guarded(self, predicate: Optional[ir.Value], emit, default=None):
        """``emit()`` where ``predicate`` holds; the value it returns, or ``default`` elsewhere."""
        b = self.b
        if predicate is None:
            return emit()
        before = b.block
        then = self.function.append_basic_block("guarded")
        after = self.function.append_basic_block("guarded_end")
        b.cbranch(predicate, then, after)
        b.position_at_end(then)
        value = emit()
        end = b.block
        b.branch(after)
        b.position_at_end(after)
        if value is None:
            return None
        phi = b.phi(value.type)
        phi.add_incoming(value, end)
        phi.add_incoming(default, before)
        return phi

    def _and(self, a, c):
        if a is None:
            return c
        if c is None:
            return a
        return self.b.and_(a, c)

    def loop(self, start: ir.Value, stop: ir.Value, step: int, carried: list, body) -> list:
        """A counted loop over i in [start, stop) by ``step`` (i32, same in every thread or not),
        carrying ``carried``: ``body(i, values) -> next values``. Returns the values after the loop."""
        b = self.b
        pre = b.block
        header = self.function.append_basic_block("loop")
        inner = self.function.append_basic_block("loop_body")
        done = self.function.append_basic_block("loop_end")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I32)
        i.add_incoming(start, pre)
        phis = []
        for value in carried:
            phi = b.phi(value.type)
            phi.add_incoming(value, pre)
            phis.append(phi)
        b.cbranch(b.icmp_signed("<", i, stop), inner, done)
        b.position_at_end(inner)
        following = body(i, list(phis))
        latch = b.block
        i.add_incoming(b.add(i, ir.Constant(I32, step)), latch)
        for phi, value in zip(phis, following):
            phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(done)
        return phis

    def counted_loop(self, start: ir.Value, stop: ir.Value, step: int, body) -> None:
        self.loop(start, stop, step, [], lambda i, _: body(i) or [])

    # the control-flow ops -------------------------------------------------------------------------
    def _carried_values(self, layouts, values) -> list:
        return [self.regs(v, lay) if lay is not None else [self.scalar(v)] for lay, v in zip(layouts, values)]

    def _phis(self, incoming, block) -> list:
        """A phi per register of each carried value, entered from ``block`` with ``incoming``."""
        out = []
        for values in incoming:
            phis = []
            for value in values:
                phi = self.b.phi(value.type)
                phi.add_incoming(value, block)
                phis.append(phi)
            out.append(phis)
        return out

    def _bind(self, v: Value, layout, values) -> None:
        if layout is None:
            self.scalars[v.id] = values[0]
        else:
            self.dist[v.id] = (layout, values)

    def lower_for(self, op: Operation) -> None:
        b = self.b
        lower, upper, step = (self.scalar(v) for v in op.operands[:3])
        inits = op.operands[3:]
        body = op.regions[0]
        layouts = self._carried_layouts(inits, body.terminator.operands if body.terminator is not None else (),
                                        [[(arg, body)] for arg in body.args[1:]], body.args[1:])
        initial = self._carried_values(layouts, inits)
        loop = CountedFor(b, self.function, lower)
        phis = self._phis(initial, loop.pre)
        loop.enter_body(upper, step, op.operands[0].type.is_int_signed())
        self.scalars[body.args[0].id] = loop.iv
        for arg, lay, values in zip(body.args[1:], layouts, phis):
            self._bind(arg, lay, values)
        self.push()
        terminator = self.lower_region(body)
        yields = list(terminator.operands) if terminator is not None else []
        following_values = self._carried_values(layouts, yields)
        self.pop()
        latch = loop.step(step)
        for group, values in zip(phis, following_values):
            for phi, value in zip(group, values):
                phi.add_incoming(value, latch)
        loop.leave()
        for r, lay, values in zip(op.results, layouts, phis):
            self._bind(r, lay, values)

    def lower_while(self, op: Operation) -> None:
        spin = not op.attrs.get("bounded") and spins_on_memory(op)
        self.spinning += spin
        try:
            self._lower_while(op)
        finally:
            self.spinning -= spin

    def _lower_while(self, op: Operation) -> None:
        b = self.b
        before, after = op.regions
        inits = op.operands
        passed_on = before.terminator.operands[1:] if before.terminator is not None else ()
        layouts = self._carried_layouts(inits, (), [
            [(arg, before)] + [(name, after) for name, value in zip(after.args, passed_on) if value is arg]
            for arg in before.args])
        initial = self._carried_values(layouts, inits)
        pre = b.block
        header = self.function.append_basic_block("while_before")
        after_bb = self.function.append_basic_block("while_after")
        exit_bb = self.function.append_basic_block("while_end")
        b.branch(header)
        b.position_at_end(header)
        phis = self._phis(initial, pre)
        for arg, lay, values in zip(before.args, layouts, phis):
            self._bind(arg, lay, values)
        self.push()
        condition_op = self.lower_region(before)
        condition = self.scalar(condition_op.operands[0])
        passed = condition_op.operands[1:]
        pass_layouts = self._carried_layouts(passed)
        passed_values = self._carried_values(pass_layouts, passed)
        self.pop()
        b.cbranch(condition, after_bb, exit_bb)
        b.position_at_end(after_bb)
        for arg, lay, values in zip(after.args, pass_layouts, passed_values):
            self._bind(arg, lay, values)
        self.push()
        terminator = self.lower_region(after)
        yields = list(terminator.operands) if terminator is not None else []
        following_values = self._carried_values(layouts, yields)
        self.pop()
        latch = b.block
        for group, values in zip(phis, following_values):
            for phi, value in zip(group, values):
                phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for r, lay, values in zip(op.results, pass_layouts, passed_values):
            self._bind(r, lay, values)

    def lower_if(self, op: Operation) -> None:
        b = self.b
        condition = self.scalar(op.operands[0])
        then_bb = self.function.append_basic_block("if_then")
        else_bb = self.function.append_basic_block("if_else")
        after = self.function.append_basic_block("if_end")
        b.cbranch(condition, then_bb, else_bb)
        layouts = None
        incoming = []
        for block, region in ((then_bb, op.regions[0]), (else_bb, op.regions[1] if len(op.regions) > 1 else None)):
            b.position_at_end(block)
            self.push()
            values = []
            if region is not None:
                terminator = self.lower_region(region)
                values = list(terminator.operands) if terminator is not None else []
            if layouts is None:
                layouts = self._carried_layouts(values) if values else [None] * len(op.results)
            lowered = self._carried_values(layouts, values) if values else []
            self.pop()
            if not b.block.is_terminated:
                incoming.append((b.block, lowered))
                b.branch(after)
        b.position_at_end(after)
        for i, r in enumerate(op.results):
            count = 1 if layouts[i] is None else layouts[i].num_regs
            merged = []
            for k in range(count):
                phi = b.phi(incoming[0][1][i][k].type)
                for block, lowered in incoming:
                    phi.add_incoming(lowered[i][k], block)
                merged.append(phi)
            self._bind(r, layouts[i], merged)
