"""Which pointer arguments a kernel may read and which it may write.

torch.compile asks this of a user kernel inside a compiled graph (which tensors does it mutate?)
to know what to copy and what may be fused. An op that reads or writes memory (the IR spec's
effects) touches the argument its pointer derives from (``provenance``); a pointer the provenance
analysis cannot trace to one argument (a select between two tensors' pointers, a pointer made from
an integer) and an op whose effects are unknown (inline asm) count as touching every pointer
argument, so the answer may be too large, never too small.
"""
from __future__ import annotations

from ..ir.ops import Function
from ..ir.spec import READS, SPEC, WRITES
from .provenance import UNKNOWN, pointer_provenance


def argument_accesses(fn: Function) -> tuple[frozenset[int], frozenset[int]]:
    """(indices into ``fn.args`` of the pointer arguments read, those written)."""
    pointer_args, provenance = pointer_provenance(fn)
    every = frozenset(pointer_args)
    reads: set[int] = set()
    writes: set[int] = set()
    for op in fn.walk():
        spec = SPEC.get(op.opcode)
        effects = spec.effects & {READS, WRITES} if spec is not None else frozenset({READS, WRITES})
        if not effects:
            continue
        source = provenance.get(op.operands[0].id, None) if op.operands and op.opcode != "inline_asm" else None
        touched = every if source is None or source == UNKNOWN else {pointer_args[source]}
        if READS in effects:
            reads |= touched
        if WRITES in effects:
            writes |= touched
    return frozenset(reads), frozenset(writes)
