"""Which programs of a grid talk to each other through memory: the effects analysis.

Programs of a launch may run in any order and at once on a GPU. A kernel whose programs
communicate (a lock, a ticket counter, a spin wait on a flag another program sets) needs every
program to make progress while the others run; a backend that runs programs in batches (the
interpreter) or one thread per program chunk (a CPU backend) must then run them one at a time, in
order. This module decides that from the IR, so that every backend decides it the same way.
"""
from __future__ import annotations

from ..ir.ops import Function, Operation, Region
from ..ir.spec import POINTER_READS, SYNCHRONIZING_READS

# Opcodes whose results are memory another program may have written (the IR spec's pointer reads).
MEMORY_READS = POINTER_READS


def _reads_or_uses(op: Operation, tainted: set[int]) -> bool:
    """True when ``op`` reads memory or uses a tainted value (for control flow: anything inside it)."""
    if not op.regions:
        return op.opcode in MEMORY_READS or any(v.id in tainted for v in op.operands)
    if any(v.id in tainted for v in op.operands):
        return True
    return any(inner.opcode in MEMORY_READS or any(v.id in tainted for v in inner.operands)
               for nested in op.regions for inner in nested.walk())


def _taint_region(region: Region, tainted: set[int]) -> None:
    for op in region.ops:
        if _reads_or_uses(op, tainted):
            tainted.update(r.id for r in op.results)


def _carry(values, into, tainted: set[int]) -> bool:
    """Taints the region arguments ``into`` that receive a tainted value; True when any is new."""
    new = {arg.id for value, arg in zip(values, into) if value.id in tainted} - tainted
    tainted.update(new)
    return bool(new)


def spins_on_memory(loop: Operation) -> bool:
    """True when the condition of the ``while`` op ``loop`` depends on memory read inside the loop,
    in this iteration or (through carried values) an earlier one: a spin wait.

    The values derived from a memory read are followed to a fixed point through both regions and
    the values carried between them (the ``condition`` terminator feeds ``after``'s arguments, the
    ``yield`` of ``after`` feeds ``before``'s)."""
    assert loop.opcode == "while", loop.opcode
    before, after = loop.regions
    tainted: set[int] = set()
    changed = True
    while changed:
        _taint_region(before, tainted)
        condition = before.terminator
        changed = _carry(condition.operands[1:], after.args, tainted) if condition is not None else False
        _taint_region(after, tainted)
        if after.terminator is not None:
            changed |= _carry(after.terminator.operands, before.args, tainted)
    condition = before.terminator
    return condition is not None and condition.operands[0].id in tainted


def needs_program_order(fn: Function) -> bool:
    """True when programs may talk to each other through memory, so they must run one at a time.

    That is: an atomic or atomic load whose result the kernel uses (a lock, a ticket, a counter or a
    flag that steers the program), or a while loop whose condition depends on memory it reads (a spin wait). A loop marked
    ``bounded`` (a ``for`` with ``break``, which the frontend makes a while loop) is no spin wait: it
    ends after its trip count whatever memory holds.
    """
    used = {v.id for op in fn.walk() for v in op.operands}
    for op in fn.walk():
        if op.opcode in SYNCHRONIZING_READS and op.result.id in used:
            return True
        if op.opcode == "while" and not op.attrs.get("bounded") and spins_on_memory(op):
            return True
    return False
