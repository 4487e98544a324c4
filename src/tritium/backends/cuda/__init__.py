"""The NVIDIA GPU backend: the tile IR lowered to LLVM IR for NVPTX, PTX from LLVM, a cubin from
``ptxas`` (when present; else the driver compiles the PTX), launched through the CUDA driver.

Stages: "ttir" (the IR after the passes), "layouts" (the IR with the layout of each block value,
``compiler/ir/encodings.py``: those of the values a dot touches decided by the layouts pass,
``assign.py``, before the code generator runs, the others chosen by it), "llir" (the LLVM IR as
generated), "ptx" and "cubin" (empty without ptxas). Layouts, lowering and the runtime are
described in docs/cuda-backend.md.
Without a GPU the backend still compiles (``tritium ir --stage ptx``, and the suite's PTX tests);
launching then says what is missing.
"""
from __future__ import annotations

from dataclasses import dataclass

import hashlib
import os
import re
from typing import Mapping, Optional, Union

from ...compiler.ir.ops import Function
from ...errors import TritonError, internal_error
from ..base import Backend, GPUTarget, Options, Stages, source_digest
from ..llvm.lowering import lower_kernel, lowered_opcodes

NAME = "cuda"
DEFAULT_ARCH = 90  # the target of compile-only use without a GPU: an H100/H200
_SHARED_MARK = "// tritium shared memory bytes: "


def arch_name(capability: int) -> str:
    """``sm_90a`` for 90 (Hopper's architecture-specific features on), ``sm_80`` for 80, ..."""
    return f"sm_{capability}" + ("a" if capability == 90 else "")


@dataclass(frozen=True)
class CUDAOptions(Options):
    """Every backend's options, and the NVIDIA ones Triton takes that leave tritium's code as it is:
    ``launch_pdl`` (programmatic dependent launch, which torch's Inductor asks for on Hopper): tritium
    launches every kernel in stream order, after the one before has finished, which is what a
    kernel waiting on its predecessor's results needs."""

    launch_pdl: bool = False
    # Hopper's wgmma for the dots that fit it (wgmma.py), on sm_90; off unless asked for
    # (TRITIUM_WGMMA=1) until it has been checked on a GPU
    wgmma: bool = False


class CUDABackend(Backend):
    """Compiled code for NVIDIA GPUs."""

    options_class = CUDAOptions
    name = NAME
    code_version = "0-" + source_digest(os.path.dirname(__file__))

    @property
    def version(self) -> str:
        """The code's digest and the libdevice file linked in (versions differ in their bits): part of
        every cached kernel's key."""
        from . import nvptx

        library = nvptx.libdevice_path() or ""
        try:  # the file's identity: a library replaced in place (same path) is a new key too
            stat = os.stat(library)
            identity = f"{library}:{stat.st_size}:{stat.st_mtime_ns}"
        except OSError:
            identity = library
        return f"{self.code_version}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"

    devices = frozenset({"cuda"})
    # Memory it launches on by copying it to the GPU and back, only when named (TRITIUM_BACKEND=cuda):
    # how the suite, whose tensors live on the CPU, runs on a GPU.
    staged_devices = frozenset({"cpu"})
    stages = ("ttir", "layouts", "llir", "ptx", "cubin")
    # it emits the asm itself; its LLVM contracts multiply-adds (nvptx.contract), as Triton's does
    skipped_passes = ("lower_inline_asm", "contract")
    cached_stages = ("llir", "ptx", "cubin")

    def compile_unavailable_reason(self) -> Optional[str]:
        """Why this backend cannot even compile here (no llvmlite), or None."""
        try:
            import llvmlite.binding  # noqa: F401
        except ImportError:
            return "llvmlite is not installed (pip install llvmlite)"
        return None

    def unavailable_reason(self) -> Optional[str]:
        from . import driver

        return self.compile_unavailable_reason() or driver.unavailable_reason()

    def lowered_opcodes(self) -> frozenset[str]:
        from . import codegen

        return lowered_opcodes(codegen.Codegen)

    def parse_options(self, options) -> Options:
        """As every backend's, with ``wgmma`` on under TRITIUM_WGMMA=1."""
        if "wgmma" not in options and os.environ.get("TRITIUM_WGMMA", "") not in ("", "0"):
            options = {**options, "wgmma": True}
        return super().parse_options(options)

    def copy_to_host(self, host_address: int, device_address: int, nbytes: int) -> None:
        """Device memory to host memory, after the work queued so far (TRITIUM_VALIDATE reads GPU
        results with it)."""
        from . import driver

        driver.synchronize()
        driver.copy_to_host(host_address, device_address, nbytes)

    def device_properties(self, ordinal: int) -> dict:
        """CUDA device ``ordinal`` described with the keys of Triton's ``get_device_properties``."""
        from . import driver

        return driver.device(ordinal).properties()

    def default_target(self) -> GPUTarget:
        from . import driver

        if driver.unavailable_reason() is None:
            major, minor = driver.device(driver.current_device_ordinal()).capability
            return GPUTarget(NAME, major * 10 + minor, 32)
        return GPUTarget(NAME, DEFAULT_ARCH, 32)

    def compile(self, fn: Function, options: Options, target: GPUTarget, checks: bool = False):
        """The executable of ``fn``; ``checks``: debug mode's variant, every access bounds-checked
        (built on the first launch in debug mode, not stored on disk). The layouts pass places what
        the dots touch, the pipeliner (``pipeline.py``) runs their operands' loads ahead, then the code
        generator lowers the result."""
        from . import codegen, nvptx

        _check_dot_sizes(fn)
        ttir = str(fn)
        from .async_copy import RingsInUse

        for share_rings in (True, False):
            lowered = _placed(fn, options, int(target.arch), checks)
            generator = codegen.Codegen(lowered, options.num_warps, options.enable_fp_fusion, checks=checks,
                                        capability=int(target.arch), wgmma=options.wgmma, share_rings=share_rings)
            try:
                module = lower_kernel(generator, "cuda", "no other backend runs kernels on GPU memory: rewrite it "
                                                         "without this op, or pass CPU tensors")
                break
            except RingsInUse:  # the scratch memory laid over the rings was used while one was live
                continue
        llir = str(module)
        if options.enable_fp_fusion:
            llir = nvptx.contract(llir)
        arch = arch_name(int(target.arch))
        try:
            ptx = nvptx.compile_to_ptx(llir, arch, fn.name)
        except TritonError:
            raise
        except Exception as error:
            raise internal_error(error, kernel=fn.name, loc=None, opcode="", where="LLVM's NVPTX code generator") \
                from error
        ptx = f"{_SHARED_MARK}{generator.smem_bytes}\n" + ptx
        cubin, report = nvptx.assemble(ptx, arch) or (b"", None)
        stages = {"ttir": ttir, "layouts": str(lowered), "llir": llir, "ptx": ptx, "cubin": cubin}
        return self._executable(fn, stages, options, generator, target, report)

    def load(self, fn: Function, asm: Mapping[str, Union[str, bytes]], options: Options, target: GPUTarget):
        from . import codegen, nvptx

        # the op table error records name ops by comes from the IR as lowered (llvm/lowering.py): the
        # backend's passes run again, nothing is lowered
        lowered = _placed(fn, options, int(target.arch))
        generator = codegen.Codegen(lowered, options.num_warps, options.enable_fp_fusion,
                                    capability=int(target.arch), wgmma=options.wgmma)

        def layouts() -> str:  # made only when read: the layouts chosen while lowering too
            placed = _placed(fn, options, int(target.arch))
            codegen.Codegen(placed, options.num_warps, options.enable_fp_fusion, capability=int(target.arch),
                            wgmma=options.wgmma).build()
            return str(placed)

        def report():  # ptxas's report of the cached PTX, made only when read
            return (nvptx.assemble(asm["ptx"], arch_name(int(target.arch))) or (None, None))[1]

        return self._executable(fn, Stages({"ttir": str(fn), **asm}, {"layouts": layouts}), options, generator,
                                target, report)

    def _executable(self, fn, stages, options, generator, target, ptxas_report=None):
        from . import launcher

        found = re.match(re.escape(_SHARED_MARK) + r"(\d+)", stages["ptx"])
        shared = int(found.group(1)) if found else 0
        make_checked = None if generator.checks else (lambda: self.compile(fn, options, target, checks=True))
        return launcher.Executable(fn, stages, shared, options.num_warps, generator.ops if generator.reports else None,
                                   checks=generator.checks, make_checked=make_checked, ptxas_report=ptxas_report)


def _placed(fn: Function, options, capability: int, checks: bool = False) -> Function:
    """A copy of ``fn`` as the code generator lowers it: loads read through a transpose read it
    transposed (``transposed_loads.py``), the layouts pass's encodings on what the dots touch, and the
    loops that feed them pipelined (not in debug mode's variant, whose accesses are
    register loads and stores, each checked)."""
    from . import assign, mma, pipeline
    from .transposed_loads import load_transposed

    lowered = fn.copy()
    load_transposed(lowered)
    assign.assign_layouts(lowered, options.num_warps, capability, async_copies=not checks, wgmma=options.wgmma)
    if not checks:
        def asynchronous(dot) -> bool:  # a wgmma dot runs on while the loop goes on
            plan = mma.plan_of(dot, options.num_warps, capability, None, options.wgmma)
            return plan is not None and plan.wgmma

        pipeline.pipeline_loops(lowered, options.num_stages, options.num_warps, asynchronous)
    return lowered


def _check_dot_sizes(fn: Function) -> None:
    """A ``tl.dot`` whose K is below what the tensor-core tiles take is a compile error at its line,
    in Triton's words (the host backends take any K)."""
    from ...compiler.ir import types as T
    from ...compiler.ir.dot_sizes import CUDA_MIN_DOT_K, dot_k_problem
    from ...errors import CompilationError

    for op in fn.walk():
        if op.opcode != "dot":
            continue
        a, b = op.operands[0].type, op.operands[1].type
        (m, k), n = T.shape_of(a)[-2:], T.shape_of(b)[-1]
        problem = dot_k_problem(a.scalar, m, n, k, CUDA_MIN_DOT_K)
        if problem is not None:
            raise CompilationError(op.loc, problem, "pad the K dimension (and mask the loads) up to the minimum; "
                                   "the interpreter and the CPU backend take any K")
