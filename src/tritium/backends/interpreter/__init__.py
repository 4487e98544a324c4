"""The interpreter backend: runs the IR with numpy, a batch of programs at a time, every access checked."""
from __future__ import annotations

import numpy as np

from ... import config
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function
from . import allocator, batches
from .memory import Allocation, Memory

NAME = "interpreter"


def _largest_block(fn: Function) -> int:
    largest = 1
    for op in fn.walk():
        for r in op.results:
            if isinstance(r.type, T.block_type):
                largest = max(largest, r.type.numel)
    return largest


_READS = ("load", "atomic_rmw", "atomic_cas")


def _spins_on_memory(loop) -> bool:
    """True when the condition of a ``while`` depends on memory read inside the loop, in this
    iteration or (through carried values) an earlier one: a spin wait."""
    before, after = loop.regions
    tainted: set[int] = set()

    def scan(region) -> None:
        for op in region.ops:
            if op.regions:  # nested control flow: tainted if anything inside reads or uses a tainted value
                hit = any(v.id in tainted for v in op.operands) or any(
                    inner.opcode in _READS or any(v.id in tainted for v in inner.operands)
                    for nested in op.regions for inner in nested.walk())
            else:
                hit = op.opcode in _READS or any(v.id in tainted for v in op.operands)
            if hit:
                tainted.update(r.id for r in op.results)

    def carry(values, into) -> bool:
        new = {arg.id for value, arg in zip(values, into) if value.id in tainted} - tainted
        tainted.update(new)
        return bool(new)

    changed = True
    while changed:
        scan(before)
        condition = before.terminator
        changed = carry(condition.operands[1:], after.args) if condition is not None else False
        scan(after)
        if after.terminator is not None:
            changed |= carry(after.terminator.operands, before.args)
    condition = before.terminator
    return condition is not None and condition.operands[0].id in tainted


def needs_program_order(fn: Function) -> bool:
    """True when programs may talk to each other through memory, so they must run one at a time.

    That is: an atomic whose result the kernel uses (a lock, a ticket, a counter that steers the
    program), or a while loop whose condition depends on memory it reads (a spin wait). A loop marked
    ``bounded`` (a ``for`` with ``break``, which the frontend makes a while loop) is no spin wait.
    """
    used = {v.id for op in fn.walk() for v in op.operands}
    for op in fn.walk():
        if op.opcode in ("atomic_rmw", "atomic_cas") and op.result.id in used:
            return True
        if op.opcode == "while" and not op.attrs.get("bounded") and _spins_on_memory(op):
            return True
    return False


class Executable:
    """A kernel ready to run on the interpreter."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.largest_block = _largest_block(fn)
        self.program_order = needs_program_order(fn)

    def launch(self, grid, runtime_args: list, debug: bool | None = None) -> None:
        """``runtime_args``: (name, IR type, value) for each run-time parameter, in order. ``debug``:
        debug mode's checks for this launch (None: ``TRITIUM_DEBUG``)."""
        allocator.tune_once()
        memory = Memory(self.fn.name)
        values = []
        for name, ty, value in runtime_args:
            if isinstance(ty, T.pointer_type):
                view = value
                allocation = Allocation(name=name, address=view.address + view.low, nbytes=view.high - view.low,
                                        pointer_offset=-view.low, element_size=view.dtype.itemsize,
                                        keepalive=view.keepalive)
                values.append(np.array([memory.add(allocation)], dtype=np.int64))
            else:
                values.append(np.array([value]).astype(ty.numpy))
        batch = 1 if self.program_order else max(1, config.batch_elements() // self.largest_block)
        batches.run(self.fn, memory, grid, values, batch, debug=config.debug_mode() if debug is None else bool(debug),
                     program_order=self.program_order, shuffle=config.shuffle_seed())


def compile(fn: Function) -> Executable:
    return Executable(fn)
