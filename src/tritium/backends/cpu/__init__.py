"""The native CPU backend: the tile IR compiled through LLVM for the host CPU, launched in-process.

Stages: "ttir" (the IR after the passes), "llir" (the LLVM IR as generated), "asm" (the optimized
machine code as text, made when first read) and "obj" (the object file: the quick tier's until the
optimized one replaces it, tiers.py); "llir" and the optimized "obj" are kept in the disk cache,
keyed by the IR, the backend version, the options and the host CPU's name and features. Placement, checks and the
launch are described in docs/cpu-backend.md.
"""
from __future__ import annotations

import hashlib
import os
from typing import ClassVar, Mapping, Optional, Union

from ... import config
from ...compiler.analysis.effects import needs_program_order
from ...compiler.ir.ops import Function
from ...compiler.ir.spec import SPEC
from ...errors import NotLoweredError, TritonError, internal_error
from ..base import Backend, GPUTarget, Options, largest_block, source_digest
from . import codegen

NAME = "cpu"


class _Stages(dict):
    """The stages' outputs; "asm" (the optimized machine code as text) is made when first read."""

    def __init__(self, stages):
        super().__init__(stages)
        if "llir" in stages:
            super().__setitem__("asm", None)

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if value is None and name == "asm":
            from . import jit

            value = jit.assembly(super().__getitem__("llir"))
            super().__setitem__("asm", value)
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default  # noqa: SIM401 - this is the mapping's get

    def items(self):
        return [(name, self[name]) for name in self]

    def values(self):
        return [self[name] for name in self]


class CPUBackend(Backend):
    """Compiled code for the host CPU, threaded over the grid, every access checked."""

    name = NAME
    version = "1-" + source_digest(os.path.dirname(__file__))  # the generated code changes with the generator's source
    devices = frozenset({"cpu"})
    stages = ("ttir", "llir", "asm", "obj")
    cached_stages = ("llir", "obj")
    math_as_interpreter = True
    unsupported_opcodes: ClassVar[Mapping[str, str]] = {
        "tile_load": "the compiler's lower_tile_access pass turns it into pointer arithmetic, a mask and a load",
        "tile_store": "the compiler's lower_tile_access pass turns it into pointer arithmetic, a mask and a store",
        "inline_asm": "the compiler's lower_inline_asm pass turns it into the tl ops that emulate its instruction",
    }

    def unavailable_reason(self) -> Optional[str]:
        try:
            import llvmlite.binding  # noqa: F401
        except ImportError:
            return "llvmlite is not installed (pip install llvmlite)"
        return None

    def lowered_opcodes(self) -> frozenset[str]:
        from ..llvm import scalar

        handled = {name[len("lower_"):] for name in dir(codegen.Codegen) if name.startswith("lower_")}
        return frozenset((handled | set(scalar.LOWER) | {"yield", "condition"}) & set(SPEC))

    def declines(self, fn: Function) -> bool:
        """Kernels whose programs wait on each other (a lock, a ticket, a spin wait: the effects
        analysis) run here in program order on one thread, which hangs on a spin no earlier program
        can release; the interpreter runs them in the same order and reports such a spin as a
        DeadlockError. By default they go there; ``TRITIUM_BACKEND=cpu`` keeps them here."""
        return needs_program_order(fn)

    def default_target(self) -> GPUTarget:
        from . import jit

        _, cpu, features = jit.host_cpu()
        digest = hashlib.sha256(features.encode()).hexdigest()[:12]
        return GPUTarget("cpu", f"{cpu}-{digest}" + ("" if config.bounds_checks() else "-unchecked"), 1)

    def parse_options(self, options) -> Options:
        return Options(**{**super().parse_options(options).as_dict(), "debug": None})

    def compile(self, fn: Function, options: Options, target: GPUTarget):
        from . import jit

        triple, _, _ = jit.host_cpu()
        generator = codegen.Codegen(fn, triple, checks=not str(target.arch).endswith("-unchecked"),
                                    hardware_ldexp=jit.wide_vectors())
        try:
            module = generator.build()
        except (codegen.UnsupportedOp, NotImplementedError) as error:
            op = getattr(generator, "current", None)
            raise NotLoweredError(getattr(op, "loc", None),
                                   f"the cpu backend cannot compile {error} in kernel '{fn.name}' yet",
                                   "run it on the interpreter: TRITIUM_BACKEND=interpreter") from None
        except TritonError:
            raise
        except Exception as error:  # not the kernel's mistake: ours
            op = getattr(generator, "current", None)
            raise internal_error(error, kernel=fn.name, loc=getattr(op, "loc", None),
                                 opcode=getattr(op, "opcode", ""), where="the cpu backend") from error
        llir = str(module)
        from . import launcher

        launcher.register_print_hook()  # before the symbol check: a process's first kernel may print
        if config.quick_compile():
            obj = jit.compile_quick(llir)
            if obj is not None:  # launched at once; the optimized code replaces it when ready (tiers.py)
                executable = self._executable(fn, generator, {"ttir": str(fn), "llir": llir, "obj": obj})
                executable.optimize_later(llir)
                return executable
        obj = jit.compile_to_object(llir)
        return self._executable(fn, generator, {"ttir": str(fn), "llir": llir, "obj": obj})

    def wait_for_optimized_code(self, timeout: Optional[float] = None) -> bool:
        """Blocks until every kernel launched with quick code runs its fully optimized code (see
        ``tiers.py``); False when ``timeout`` seconds passed first. Time kernels after this."""
        from . import tiers

        return tiers.wait(timeout)

    def load(self, fn: Function, asm: Mapping[str, Union[str, bytes]], options: Options, target: GPUTarget):
        from . import jit

        triple, _, _ = jit.host_cpu()
        generator = codegen.Codegen(fn, triple, checks=not str(target.arch).endswith("-unchecked"),
                                    hardware_ldexp=jit.wide_vectors())
        generator.build()  # the op table and pointer facts the launcher reports errors with
        return self._executable(fn, generator, {"ttir": str(fn), **asm})

    def _executable(self, fn, generator, stages):
        from . import jit, launcher

        launcher.register_print_hook()
        loaded = jit.LoadedObject(stages["obj"])
        return launcher.Executable(fn, loaded, _Stages(stages), generator.ops, generator.pointer_args, generator.provenance,
                                   largest_block(fn), needs_program_order(fn), generator.scratch_bytes)
