"""``CompiledKernel``: one specialization of a kernel, its IR and what a backend made of it.

The record is the compiler's; launching it belongs to the runtime, which hands each kernel it
builds a ``launcher`` (``compiled[grid](*args)`` calls it), so this module needs no runtime.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Optional

from .ir import types as T

# Ops a GPU routes through shared memory; ``metadata.shared`` adds up the bytes of their operands.
_SHARED_MEMORY_OPCODES = frozenset({"reduce", "scan", "dot", "permute"})


def shared_memory_bytes(fn, num_stages: int) -> int:
    """An estimate of the shared memory a GPU would give this kernel: the largest block that a
    reduction, scan or transpose exchanges between threads, or a dot's operand tiles times
    ``num_stages - 1`` (the pipeline's buffers). 0 for kernels that need none, as on a GPU."""
    largest = 0
    for op in fn.walk():
        if op.opcode not in _SHARED_MEMORY_OPCODES:
            continue
        blocks = [v.type for v in op.operands if isinstance(v.type, T.block_type)]
        if op.opcode == "dot":
            size = sum(b.numel * b.element_ty.itemsize for b in blocks[:2]) * max(1, num_stages - 1)
        else:
            size = max((b.numel * b.element_ty.itemsize for b in blocks), default=0)
        largest = max(largest, size)
    return largest


@dataclass
class CompiledKernel:
    """One specialization of a kernel: its IR and what the backend made of it.

    ``kernel.warmup(...)`` and ``tritium.compile(...)`` return one, and it can be launched directly
    with ``compiled[grid](*args)``, every parameter given (constexprs included, as Triton's compiled
    kernels take them) or only the run-time ones. ``asm`` holds each of the backend's stages by
    name ("ttir": the IR text after the passes). ``options`` is the backend's options record.
    ``n_regs`` and ``n_spills`` are nominal (32 and 0); ``metadata.shared`` estimates what a GPU
    would use (see ``shared_memory_bytes``).
    """

    name: str
    key: tuple
    ir: Any  # compiler.ir.ops.Function
    executable: Any
    backend: str
    options: Any = None  # backends.base.Options
    target: Any = None  # backends.base.GPUTarget
    fn: Any = None  # the @jit function (a JITCallable)
    specs: dict = field(default_factory=dict)  # parameter name -> IR type, or constexpr value
    launcher: Optional[Callable] = None  # (kernel, grid, args, kwargs) -> kernel; set by the runtime
    n_regs: int = 32
    n_spills: int = 0

    @property
    def asm(self) -> dict:
        stages = getattr(self.executable, "asm", None) or {"ttir": str(self.ir)}
        return {name: stages[name] for name in stages}  # a backend may make a stage when it is read

    def _option(self, name: str, default):
        value = getattr(self.options, name, None)
        return default if value is None else value

    @functools.cached_property
    def shared(self) -> int:
        return shared_memory_bytes(self.ir, int(self._option("num_stages", 3)))

    @property
    def metadata(self):
        target = self.target
        return SimpleNamespace(name=self.name, shared=self.shared, num_warps=self._option("num_warps", 4),
                               num_stages=self._option("num_stages", 3), num_ctas=self._option("num_ctas", 1),
                               backend=self.backend,
                               target=(target.backend, target.arch, target.warp_size) if target else None)

    def _init_handles(self) -> None:
        """Loads the kernel onto the device: nothing left to do on the host."""

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            if self.launcher is None:
                from ..errors import LaunchError

                raise LaunchError(f"compiled kernel {self.name} has no launcher; compile it with tritium.compile "
                                  "or kernel.warmup to launch it")
            return self.launcher(self, grid, args, kwargs)

        return launcher
