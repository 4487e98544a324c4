"""The blocks of a counted ``for`` loop, as both compiled backends lower the IR's ``for``: a header
holding the induction variable's phi (and the phis of what the loop carries, which the backend adds),
the test ``iv < upper`` (``>`` for a negative signed step), the body, the latch that steps the
variable, and the block after the loop."""
from __future__ import annotations

from llvmlite import ir

from .types import I1


class CountedFor:
    """Use: ``loop = CountedFor(b, function, lower)`` (the builder is then in the header, after the
    variable's phi: add the carried phis there), ``loop.enter_body(upper, step, signed)`` (the builder
    is in the body), ``latch = loop.step(step)`` after the body (add the carried values' incoming
    edges from ``latch``), ``loop.leave()`` (the builder is after the loop)."""

    def __init__(self, b: ir.IRBuilder, function: ir.Function, lower: ir.Value):
        self.b = b
        self.pre = b.block
        self.header = function.append_basic_block("for_header")
        self.body = function.append_basic_block("for_body")
        self.exit = function.append_basic_block("for_end")
        b.branch(self.header)
        b.position_at_end(self.header)
        self.iv = b.phi(lower.type)
        self.iv.add_incoming(lower, self.pre)

    def enter_body(self, upper: ir.Value, step: ir.Value, signed: bool) -> None:
        """The trip test: on while ``iv < upper`` (``iv > upper`` when a signed step is negative)."""
        b = self.b
        compare = b.icmp_signed if signed else b.icmp_unsigned
        going_up = b.icmp_signed(">", step, ir.Constant(step.type, 0)) if signed else ir.Constant(I1, 1)
        keep = b.select(going_up, compare("<", self.iv, upper), compare(">", self.iv, upper))
        b.cbranch(keep, self.body, self.exit)
        b.position_at_end(self.body)

    def step(self, step: ir.Value) -> ir.Block:
        """The variable's next value, from the block the body ended in (returned: the latch)."""
        b = self.b
        following = b.add(self.iv, step)
        latch = b.block
        self.iv.add_incoming(following, latch)
        return latch

    def leave(self) -> None:
        self.b.branch(self.header)
        self.b.position_at_end(self.exit)
