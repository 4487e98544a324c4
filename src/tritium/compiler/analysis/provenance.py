"""Pointer provenance: which pointer argument each pointer value of a kernel derives from.

``pointer_provenance(fn)`` gives ``(pointer_args, provenance)``: the argument index of each pointer
argument, in order, and for each pointer value (by id) the position of its argument in that list,
or ``UNKNOWN`` where it may derive from several (a select between two tensors). Values are followed
through pointer arithmetic, shape ops and loop-carried or branch results to a fixpoint. A compiled
backend names the tensor of an out-of-bounds access with it.
"""
from __future__ import annotations

from typing import Optional

from ..ir import types as T
from ..ir.ops import Function, Operation

UNKNOWN = -1

_FOLLOWED = ("addptr", "splat", "broadcast", "reshape", "hint", "permute", "flip", "cat", "join", "split", "bitcast")


def pointer_provenance(fn: Function) -> tuple[list[int], dict[int, Optional[int]]]:
    pointer_args: list[int] = []
    provenance: dict[int, Optional[int]] = {}
    for i, a in enumerate(fn.args):
        if isinstance(a.type, T.pointer_type):
            provenance[a.id] = len(pointer_args)
            pointer_args.append(i)

    def merge(results, sources) -> bool:
        known = [provenance.get(s.id) for s in sources]
        if (any(k is None for k in known) and not all(k is None for k in known)
                and not any(k == UNKNOWN for k in known if k is not None)):
            return False  # wait for the others
        kinds = {k for k in known if k is not None}
        if not kinds:
            return False
        merged = kinds.pop() if len(kinds) == 1 else UNKNOWN
        changed = False
        for r in results:
            if not isinstance(r.type.scalar, T.pointer_type):
                continue
            old = provenance.get(r.id)
            new = merged if old is None or old == merged else UNKNOWN
            if new != old:
                provenance[r.id] = new
                changed = True
        return changed

    def carry(op: Operation) -> bool:
        changed = False
        if op.opcode == "for":
            body = op.regions[0]
            yields = body.terminator.operands if body.terminator else []
            for i, init in enumerate(op.operands[3:]):
                sources = [init] + ([yields[i]] if i < len(yields) else [])
                changed |= merge([body.args[i + 1], op.results[i]], sources)
        elif op.opcode == "if":
            for i, r in enumerate(op.results):
                sources = [reg.terminator.operands[i] for reg in op.regions if reg.terminator and reg.ops]
                changed |= merge([r], sources)
        elif op.opcode == "while":
            before, after = op.regions
            cond = before.terminator
            yields = after.terminator.operands if after.terminator else []
            for i, init in enumerate(op.operands):
                sources = [init] + ([yields[i]] if i < len(yields) else [])
                changed |= merge([before.args[i]], sources)
            if cond is not None:
                for i, v in enumerate(cond.operands[1:]):
                    changed |= merge([after.args[i], op.results[i]], [v])
        return changed

    changed = True
    while changed:  # loops carry pointers: iterate to a fixpoint
        changed = False
        for op in fn.walk():
            if op.opcode in _FOLLOWED:
                sources = [op.operands[0]] if op.opcode not in ("cat", "join") else op.operands[:2]
                changed |= merge(op.results, sources)
            elif op.opcode == "select":
                changed |= merge(op.results, op.operands[1:3])
            elif op.opcode in ("for", "while", "if"):
                changed |= carry(op)
    return pointer_args, provenance
