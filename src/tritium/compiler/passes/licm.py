"""Loop-invariant code motion: a pure op in a ``for`` body (or a ``while`` region) whose operands
are all defined outside the loop moves to just before the loop, so it runs once instead of once
per iteration.

Why it is correct: a pure op computes its results from its operands alone, and those are the same
on every iteration, so computing it once before the loop gives every iteration the same values.
Computing it when the loop would run zero times is harmless only if it cannot stop the kernel:
ops that may raise at run time stay (the spec's ``may_raise`` trait), and so do ops that debug mode
(``TRITIUM_DEBUG=1``) checks (``spec.checked_in_debug_mode``), unless the region surely runs: a ``for``
with constant bounds that iterates at least once, or a ``while`` loop's ``before`` region, which
runs at least once. Only ops directly in the loop's region move, never ones nested in an ``if``
inside it (they may not run at all). Ops move in program order, so when one moves, the ops that
depend on it only through loop-invariant values move after it: chains hoist in one walk. Inner
loops are handled first, so an op invariant in two nested loops leaves both.
"""
from __future__ import annotations

from ..ir.ops import Function, Operation, Region
from ..ir.spec import MAY_RAISE, SPEC, checked_in_debug_mode, is_pure
from .rewriting import NO_CONSTANT, constant_value, values_read

def _defined_in(op: Operation, into: set[int]) -> None:
    """Adds the ids of every value ``op``'s regions define (arguments and results, at any depth)."""
    for region in op.regions:
        into.update(a.id for a in region.args)
        for inner in region.ops:
            into.update(r.id for r in inner.results)
            _defined_in(inner, into)


def _surely_runs(loop: Operation, region_index: int) -> bool:
    if loop.opcode == "while":
        return region_index == 0  # the before region runs at least once
    lower, upper, step = (constant_value(v) for v in loop.operands[:3])
    if any(bound is NO_CONSTANT for bound in (lower, upper, step)):
        return False
    return lower < upper if step > 0 else lower > upper


def _movable(op: Operation, inside: set[int], surely_runs: bool) -> bool:
    if not op.results or not is_pure(op) or MAY_RAISE in SPEC[op.opcode].traits:
        return False
    if checked_in_debug_mode(op) and not surely_runs:
        return False
    return not any(value.id in inside for value in values_read(op))


def _hoist_from(loop: Operation) -> list[Operation]:
    """Takes the loop-invariant ops out of ``loop``'s regions and returns them, in order."""
    inside: set[int] = set()
    _defined_in(loop, inside)
    hoisted: list[Operation] = []
    for index, region in enumerate(loop.regions):
        surely_runs = _surely_runs(loop, index)
        kept = []
        for op in region.ops:
            if _movable(op, inside, surely_runs):
                hoisted.append(op)
                inside.difference_update(r.id for r in op.results)
            else:
                kept.append(op)
        region.ops = kept
    return hoisted


def _hoist_in_region(region: Region) -> None:
    ops: list[Operation] = []
    for op in region.ops:
        for nested in op.regions:
            _hoist_in_region(nested)
        if op.opcode in ("for", "while"):
            ops.extend(_hoist_from(op))
        ops.append(op)
    region.ops = ops


def hoist_loop_invariants(fn: Function) -> None:
    _hoist_in_region(fn.body)

