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
from .ir.spec import SHARED_MEMORY, opcodes_with

# Ops a GPU routes through shared memory; ``metadata.shared`` adds up the bytes of their operands.
_SHARED_MEMORY_OPCODES = opcodes_with(SHARED_MEMORY)


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



def kernel_hash(name: str, key, backend: str, options) -> str:
    """The hex digest ``CompiledKernel.hash`` of a kernel compiled as ``name`` for ``key`` on ``backend``
    with ``options`` (known before it is built: the kernel-load hooks receive it)."""
    import hashlib

    return hashlib.sha256(repr((name, key, backend, options)).encode()).hexdigest()

@dataclass
class CompiledKernel:
    """One specialization of a kernel: its IR and what the backend made of it.

    ``kernel.warmup(...)`` and ``tritium.compile(...)`` return one, and it can be launched directly
    with ``compiled[grid](*args)``, every parameter given (constexprs included, as Triton's compiled
    kernels take them) or only the run-time ones. ``asm`` holds each of the backend's stages by
    name ("ttir": the IR text after the passes). ``options`` is the backend's options record.
    On a host backend ``n_regs`` and ``n_spills`` are nominal (32 and 0) and ``metadata.shared``
    estimates what a GPU would use (see ``shared_memory_bytes``); on a GPU they are the loaded
    kernel's, read from the driver (the first read loads it, as ``_init_handles()`` does) and the
    shared memory it was compiled to use.
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
    protocol_launcher: Optional[Callable] = None  # (kernel, grid, args) -> kernel, for ``run``; set by the runtime
    source: Any = None  # the ASTSource it was compiled from, by triton.compile

    def __post_init__(self) -> None:
        self._bind_entry_points()

    @property
    def src(self):
        """What it was compiled from: the ASTSource given to ``triton.compile``, else one naming the
        @jit function (``src.fn``) and the specialization (``src.signature``, ``src.constants``)."""
        if self.source is not None:
            return self.source
        signature = {name: (spec.ir_name if hasattr(spec, "ir_name") else "constexpr")
                     for name, spec in self.specs.items()}
        constants = {name: getattr(spec, "value", spec) for name, spec in self.specs.items()
                     if signature[name] == "constexpr"}
        return SimpleNamespace(fn=self.fn, signature=signature, constants=constants, name=self.name)

    @functools.cached_property
    def hash(self) -> str:
        """A hex digest naming this compiled kernel (its specialization, backend and options)."""
        return kernel_hash(self.name, self.key, self.backend, self.options)

    @property
    def asm(self) -> dict:
        stages = self.executable.asm or {"ttir": str(self.ir)}
        return {name: stages[name] for name in stages}  # a backend may make a stage when it is read

    def _option(self, name: str, default):
        value = getattr(self.options, name, None)
        return default if value is None else value

    @functools.cached_property
    def shared(self) -> int:
        compiled = self.executable.shared_bytes  # a GPU backend's own figure
        if compiled is not None:
            return int(compiled)
        return shared_memory_bytes(self.ir, int(self._option("num_stages", 3)))

    @property
    def metadata(self):
        target = self.target
        return SimpleNamespace(name=self.name, shared=self.shared, num_warps=self._option("num_warps", 4),
                               num_stages=self._option("num_stages", 3), num_ctas=self._option("num_ctas", 1),
                               backend=self.backend,
                               target=(target.backend, target.arch, target.warp_size) if target else None)

    def _init_handles(self) -> None:
        """Loads the kernel onto the current device (nothing to do on the host): ``function`` is then
        its device handle, ``n_regs`` and ``n_spills`` its registers and spills per thread; and binds
        ``run``, as ``_bind_entry_points``."""
        self._bind_entry_points()
        loaded = self.executable.load()
        if loaded is not None:
            self.function = loaded.handle
            self.__dict__["_registers"] = (int(loaded.n_regs), int(loaded.n_spills))
        else:
            self.__dict__["_registers"] = (32, 0)  # nominal: code that runs on the host

    def _loaded_registers(self) -> tuple[int, int]:
        if "_registers" not in self.__dict__:
            self._init_handles()
        return self.__dict__["_registers"]

    @property
    def n_regs(self) -> int:
        """Registers per thread of the loaded kernel (32 on the host)."""
        return self._loaded_registers()[0]

    @property
    def n_spills(self) -> int:
        """Spilled 4-byte words per thread of the loaded kernel (0 on the host)."""
        return self._loaded_registers()[1]

    def _bind_entry_points(self) -> None:
        """Binds ``run``, the launch entry point of Triton's compiled kernels, and ``function``, the
        device handle (None until loaded), as Triton binds them: as attributes, which pickling may
        have emptied."""
        if getattr(self, "run", None) is None:
            self.run = self._run
        if "function" not in self.__dict__:
            self.function = None

    def _run(self, grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata, enter_hook,
             exit_hook, *args):
        """``kernel.run(grid_0, grid_1, grid_2, stream, function, metadata, launch_metadata,
        enter_hook, exit_hook, *args)``, Triton's launch protocol, which code generators call
        directly: ``args`` are every parameter in order, constexprs included. The hooks passed are
        ``knobs.runtime``'s, which every launch calls already."""
        if self.protocol_launcher is not None:
            return self.protocol_launcher(self, (grid_0, grid_1, grid_2), args)
        if self.launcher is None:
            from ..errors import LaunchError

            raise LaunchError(f"compiled kernel {self.name} has no launcher; compile it with tritium.compile "
                              "or kernel.warmup to launch it")
        return self.launcher(self, (grid_0, grid_1, grid_2), args, {})

    def launch_metadata(self, grid, stream, *args):
        """What launch hooks receive (a ``knobs.LaunchMetadata``): the kernel's name, device function,
        stream, grid and backend, with what its @jit function's ``launch_metadata`` adds for ``args``
        (every parameter, in order)."""
        from .. import knobs

        names = list(getattr(self.fn, "arg_names", ()))
        return knobs.LaunchMetadata.of(self, grid, stream, dict(zip(names, args)))

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            if self.launcher is None:
                from ..errors import LaunchError

                raise LaunchError(f"compiled kernel {self.name} has no launcher; compile it with tritium.compile "
                                  "or kernel.warmup to launch it")
            return self.launcher(self, grid, args, kwargs)

        return launcher
