"""The interpreter backend: runs the IR with numpy, a batch of programs at a time, every access checked.

It serves host memory ("cpu"). Its one stage is "ttir", the IR text after the passes; there is
nothing to cache on disk, since building its executable costs one walk over the IR.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import config
from ...compiler.analysis.effects import needs_program_order
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function
from ...compiler.ir.spec import TERMINATORS
from .. import malloc_tuning
from ..base import Backend, GPUTarget, KernelArgument, Options, largest_block
from ..base import Executable as ExecutableBase
from . import batches
from .memory import Allocation, Memory

NAME = "interpreter"


class Executable(ExecutableBase):
    """A kernel ready to run on the interpreter."""

    def __init__(self, fn: Function, options: Options | None = None):
        self.fn = fn
        self.options = options if options is not None else Options()
        self.largest_block = largest_block(fn)
        self.program_order = needs_program_order(fn)
        self.asm = {"ttir": str(fn)}

    def launch(self, grid, args: Sequence[KernelArgument], stream: Any = None, *, debug: bool | None = None) -> None:
        """``args``: (name, IR type, value) for each run-time parameter, in order; a pointer's value
        is a buffer (``backends.base.Buffer``). ``debug``: debug mode's checks for this launch
        (None: ``TRITIUM_DEBUG``). ``stream`` is accepted and ignored: launches run in order."""
        malloc_tuning.tune_once()
        memory = Memory(self.fn.name)
        values = []
        for name, ty, value in args:
            if isinstance(ty, T.pointer_type):
                view = value
                allocation = Allocation(name=name, address=view.address + view.low, nbytes=view.high - view.low,
                                        pointer_offset=-view.low, element_size=view.dtype.itemsize,
                                        keepalive=view.keepalive)
                values.append(np.array([memory.add(allocation)], dtype=np.int64))
            else:
                with np.errstate(over="ignore"):  # a float beyond the parameter's range is an infinity
                    values.append(np.array([value]).astype(ty.numpy))
        reference = config.reference_mode()
        batch = 1 if self.program_order or reference else max(1, config.batch_elements() // self.largest_block)
        batches.run(self.fn, memory, grid, values, batch, debug=config.debug_mode() if debug is None else bool(debug),
                     program_order=self.program_order, shuffle=config.shuffle_seed(), reference=reference)


class InterpreterBackend(Backend):
    """The checked numpy interpreter, the executable definition of the IR."""

    name = NAME
    version = "1"
    devices = frozenset({"cpu"})
    stages = ("ttir",)

    def lowered_opcodes(self) -> frozenset[str]:
        from . import executor

        return frozenset(executor._EXEC) | TERMINATORS  # terminators: read by the region runner

    def parse_options(self, options) -> Options:
        # Debug mode's checks are chosen per launch, so one compilation serves both modes.
        return Options(**{**super().parse_options(options).as_dict(), "debug": None})

    def compile(self, fn: Function, options: Options, target: GPUTarget) -> Executable:
        return Executable(fn, options)

