"""The native CPU backend: the tile IR compiled through LLVM for the host CPU, launched in-process.

Stages: "ttir" (the IR after the passes), "layouts" (the IR with the placement stage's encodings,
placement.py), "llir" (the LLVM IR as generated), "asm" (the optimized
machine code as text, made when first read) and "obj" (the object file: the quick tier's until the
optimized one replaces it, tiers.py); "llir" and the optimized "obj" are kept in the disk cache,
keyed by the IR, the backend version, the options and the host CPU's name and features. Placement, checks and the
launch are described in docs/cpu-backend.md.
"""
from __future__ import annotations

import hashlib
import os
from typing import Mapping, Optional, Union

from ... import config
from ...compiler.analysis.effects import needs_program_order
from ...compiler.analysis.provenance import pointer_provenance
from ...compiler.ir.ops import Function
from ..base import Backend, GPUTarget, Options, Stages, largest_block, source_digest
from ..llvm.lowering import lower_kernel, lowered_opcodes, op_table
from . import codegen

NAME = "cpu"


def _assembly(llir: str):
    def make() -> str:
        from ..llvm import host

        return host.assembly(llir)

    return make


def _placed(fn: Function):
    def make() -> str:
        from . import placement

        placement.place(fn, codegen.Codegen.rules)
        return str(fn)

    return make


class CPUBackend(Backend):
    """Compiled code for the host CPU, threaded over the grid, every access checked."""

    name = NAME
    version = "1-" + source_digest(os.path.dirname(__file__))  # the generated code changes with the generator's source
    devices = frozenset({"cpu"})
    stages = ("ttir", "layouts", "llir", "asm", "obj")
    cached_stages = ("llir", "obj")
    # one module for every num_warps, num_stages...; enable_fp_fusion changes the IR (the contract pass)
    code_options = ("enable_fp_fusion",)
    math_as_interpreter = True

    def unavailable_reason(self) -> Optional[str]:
        try:
            import llvmlite.binding  # noqa: F401
        except ImportError:
            return "llvmlite is not installed (pip install llvmlite)"
        return None

    def lowered_opcodes(self) -> frozenset[str]:
        return lowered_opcodes(codegen.Codegen)

    def declines(self, fn: Function) -> bool:
        """Kernels whose programs wait on each other (a lock, a ticket, a spin wait: the effects
        analysis) run here in program order on one thread, which hangs on a spin no earlier program
        can release; the interpreter runs them in the same order and reports such a spin as a
        DeadlockError. By default they go there; ``TRITIUM_BACKEND=cpu`` keeps them here."""
        return needs_program_order(fn)

    def default_target(self) -> GPUTarget:
        from ..llvm import host

        _, cpu, features = host.host_cpu()
        digest = hashlib.sha256(features.encode()).hexdigest()[:12]
        return GPUTarget("cpu", f"{cpu}-{digest}" + ("" if config.bounds_checks() else "-unchecked"), 1)

    def parse_options(self, options) -> Options:
        return Options(**{**super().parse_options(options).as_dict(), "debug": None})

    def compile(self, fn: Function, options: Options, target: GPUTarget):
        from . import interpreter_tier

        if interpreter_tier.starts_on_interpreter(fn):  # tier 0: compiled when first needed
            return interpreter_tier.StartsOnInterpreter(fn, lambda: self._compile(fn, target))
        return self._compile(fn, target)

    def _compile(self, fn: Function, target: GPUTarget):
        from ..llvm import host

        triple, _, _ = host.host_cpu()
        ttir = str(fn)
        generator = codegen.Codegen(fn, triple, checks=not str(target.arch).endswith("-unchecked"),
                                    hardware_ldexp=host.wide_vectors())
        stages = {"ttir": ttir, "layouts": str(fn)}  # the placement stage ran in Codegen()
        module = lower_kernel(generator, "cpu", "run it on the interpreter: TRITIUM_BACKEND=interpreter")
        llir = str(module)
        from . import launcher

        launcher.register_print_hook()  # before the symbol check: a process's first kernel may print
        if config.quick_compile():
            obj = host.compile_quick(llir)
            if obj is not None:  # launched at once; the optimized code replaces it when ready (tiers.py)
                executable = self._executable(fn, generator, {**stages, "llir": llir, "obj": obj})
                executable.optimize_later(llir)
                return executable
        obj = host.compile_to_object(llir)
        return self._executable(fn, generator, {**stages, "llir": llir, "obj": obj})

    def wait_for_optimized_code(self, timeout: Optional[float] = None) -> bool:
        """Blocks until every kernel launched with quick code runs its fully optimized code (see
        ``tiers.py``); False when ``timeout`` seconds passed first. Time kernels after this."""
        from . import tiers

        return tiers.wait(timeout)

    def load(self, fn: Function, asm: Mapping[str, Union[str, bytes]], options: Options, target: GPUTarget):
        """The executable of a kernel compiled before (its cached stages): no module is generated; the
        op table and the pointer facts the launcher reports errors with come from the IR, the scratch
        size from the object."""
        from ..llvm import host
        from . import launcher

        launcher.register_print_hook()
        loaded = host.LoadedObject(asm["obj"])
        pointer_args, provenance = pointer_provenance(fn)
        stages = Stages({"ttir": str(fn), **asm}, {"layouts": _placed(fn), "asm": _assembly(asm["llir"])})
        return launcher.Executable(fn, loaded, stages, op_table(fn), pointer_args,
                                   provenance, largest_block(fn), needs_program_order(fn),
                                   loaded.word(codegen.SCRATCH_SYMBOL), make_checked=lambda: self._checked(fn))

    def _executable(self, fn, generator, stages, debug: bool = False):
        from ..llvm import host
        from . import launcher

        launcher.register_print_hook()
        loaded = host.LoadedObject(stages["obj"])
        stages = Stages(stages, {"asm": _assembly(stages["llir"])})
        return launcher.Executable(fn, loaded, stages, generator.ops, generator.pointer_args, generator.provenance,
                                   largest_block(fn), needs_program_order(fn), generator.scratch_bytes,
                                   make_checked=None if debug else lambda: self._checked(fn),
                                   written=generator.written if debug else ())

    def _checked(self, fn: Function):
        """The executable of ``fn``'s variant with debug mode's checks (``debug_checks.py``), which its
        debug-mode launches run; built on the first of them, not stored on disk."""
        from ..llvm import host

        triple, _, _ = host.host_cpu()
        generator = codegen.Codegen(fn, triple, hardware_ldexp=host.wide_vectors(), debug=True)
        llir = str(lower_kernel(generator, "cpu", "run it on the interpreter: TRITIUM_BACKEND=interpreter"))
        stages = {"ttir": str(fn), "layouts": str(fn), "llir": llir, "obj": host.compile_to_object(llir)}
        return self._executable(fn, generator, stages, debug=True)
