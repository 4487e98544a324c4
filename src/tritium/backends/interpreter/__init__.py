"""The interpreter backend: runs the IR with numpy, a batch of programs at a time, every access checked."""
from __future__ import annotations

import numpy as np

from ... import config
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function
from . import executor
from .memory import Allocation, Memory

NAME = "interpreter"


def _largest_block(fn: Function) -> int:
    largest = 1
    for op in fn.walk():
        for r in op.results:
            if isinstance(r.type, T.block_type):
                largest = max(largest, r.type.numel)
    return largest


def needs_program_order(fn: Function) -> bool:
    """True when programs may talk to each other through memory, so they must run one at a time.

    That is: an atomic whose result the kernel uses (a lock, a ticket, a counter that steers the
    program), or a while loop whose condition reads memory (a spin wait).
    """
    used = {v.id for op in fn.walk() for v in op.operands}
    for op in fn.walk():
        if op.opcode in ("atomic_rmw", "atomic_cas") and op.result.id in used:
            return True
        if op.opcode == "while" and any(inner.opcode in ("load", "atomic_rmw", "atomic_cas")
                                        for inner in op.regions[0].walk()):
            return True
    return False


class Executable:
    """A kernel ready to run on the interpreter."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.largest_block = _largest_block(fn)
        self.program_order = needs_program_order(fn)

    def launch(self, grid, runtime_args: list) -> None:
        """``runtime_args``: (name, IR type, value) for each run-time parameter, in order."""
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
        executor.run(self.fn, memory, grid, values, batch)


def compile(fn: Function) -> Executable:
    return Executable(fn)
