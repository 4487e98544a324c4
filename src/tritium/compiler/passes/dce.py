"""Dead-code elimination: drops operations whose results are unused and that have no side effects.

Why it is correct: an op without effects in the IR spec (``spec.has_effects``: no memory access,
synchronisation, print, assert or hint check, no ``while`` that might never exit, in it or in its
regions) changes nothing but
its results, so when nothing reads them the kernel behaves the same without it. Sweeping repeats
until nothing changes, since removing one op can leave its operands unused.
"""
from __future__ import annotations

from ..ir.ops import Function, Region
from ..ir.spec import SPEC, TERMINATOR, has_effects
from .rewriting import used_ids


def _sweep(region: Region, used: set[int]) -> bool:
    changed = False
    kept = []
    for op in region.ops:
        for nested in op.regions:
            changed |= _sweep(nested, used)
        dead = (TERMINATOR not in SPEC[op.opcode].traits and not has_effects(op)
                and not any(r.id in used for r in op.results))
        if dead:
            changed = True
        else:
            kept.append(op)
    region.ops = kept
    return changed


def eliminate_dead_code(fn: Function) -> None:
    while True:
        if not _sweep(fn.body, used_ids(fn.body)):
            return
