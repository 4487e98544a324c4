"""LLVM IR -> PTX (LLVM's NVPTX target through llvmlite) -> cubin (``ptxas``, when present), with
``ptxas -v``'s report of registers and spills (``PtxasReport``).

libdevice (``libdevice.10.bc``) is linked into modules that call ``__nv_*`` functions, with
flush-to-zero on (the ``nvvm-reflect-ftz`` module flag), as Triton links it; everything but the
kernel is then made internal so the optimizer drops what the kernel does not call.

Where the tools come from, in order: ``TRITIUM_LIBDEVICE`` / ``TRITIUM_PTXAS``; for libdevice, the
copy an installed Triton ships (the same file gives Triton's bits); the ``nvidia-nvvm`` and
``nvidia-cuda-nvcc`` wheels (``pip install tritium[cuda]``); ``CUDA_HOME`` (or ``CUDA_PATH``);
``/usr/local/cuda``; ``ptxas`` on the PATH.
"""
from __future__ import annotations

import functools
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Optional

from ...errors import InternalError

TRIPLE = "nvptx64-nvidia-cuda"
_CONTRACTED = re.compile(r"= (fmul|fadd|fsub) (float|double) ")


def _site_candidates(*parts) -> list[pathlib.Path]:
    out = []
    for entry in sys.path:
        root = pathlib.Path(entry) / "nvidia"
        if root.is_dir():
            for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_nvvm", ""):
                out.append(root.joinpath(sub, *parts) if sub else root.joinpath(*parts))
    return out


def _toolkit_candidates(*parts) -> list[pathlib.Path]:
    out = []
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            out.append(pathlib.Path(os.environ[variable]).joinpath(*parts))
    out.append(pathlib.Path("/usr/local/cuda").joinpath(*parts))
    return out


def _triton_candidates() -> list[pathlib.Path]:
    """The libdevice an installed Triton ships (found by path, Triton is not imported): libdevice's
    versions differ in their polynomials (``erf``'s for |x| >= 1 changed between CUDA releases), and
    the same file gives Triton's bits."""
    out = []
    for entry in sys.path:
        if not entry:  # the working directory: not where an installed Triton lives
            continue
        candidate = pathlib.Path(entry) / "triton" / "backends" / "nvidia" / "lib" / "libdevice.10.bc"
        out.append(candidate)
    return out


@functools.cache
def libdevice_path() -> Optional[str]:
    """TRITIUM_LIBDEVICE; else the copy an installed Triton ships; else the nvidia-nvvm wheel's; else
    a CUDA toolkit's."""
    if os.environ.get("TRITIUM_LIBDEVICE"):
        return os.environ["TRITIUM_LIBDEVICE"]
    for candidate in _triton_candidates() + _site_candidates("nvvm", "libdevice", "libdevice.10.bc") + \
            _toolkit_candidates("nvvm", "libdevice", "libdevice.10.bc"):
        if candidate.is_file():
            return str(candidate)
    return None


def tool_path(binary: str) -> Optional[str]:
    """Where the CUDA tool ``binary`` (ptxas, nvdisasm, cuobjdump) is: NVIDIA's pip wheels, a CUDA
    toolkit, the PATH; None when nowhere."""
    for candidate in _site_candidates("bin", binary) + _toolkit_candidates("bin", binary):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(binary)


@functools.cache
def ptxas_path() -> Optional[str]:
    if os.environ.get("TRITIUM_PTXAS"):
        return os.environ["TRITIUM_PTXAS"]
    return tool_path("ptxas")


def disassemble(cubin: bytes) -> Optional[str]:
    """The SASS of ``cubin`` as ``nvdisasm`` prints it (``knobs.nvidia.nvdisasm``: the
    nvidia-cuda-nvdisasm wheel or a toolkit's); None where there is none."""
    from ... import knobs

    tool = knobs.nvidia.nvdisasm
    if tool is None or not cubin:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.cubin")
        pathlib.Path(path).write_bytes(cubin)
        done = subprocess.run([tool.path, "-c", path], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise InternalError(f"nvdisasm could not read the cubin: {done.stderr.strip()[:500]}")
    return done.stdout


@functools.cache
def _libdevice_bitcode() -> bytes:
    path = libdevice_path()
    if path is None:
        raise InternalError("the kernel calls libdevice functions, but libdevice.10.bc was not found: "
                            "pip install nvidia-nvvm (or tritium[cuda]), or set TRITIUM_LIBDEVICE to its path")
    return pathlib.Path(path).read_bytes()


def ptx_version(arch: str) -> int:
    """The PTX ISA version to emit for ``arch`` (``sm_90a``): the lowest that has the target."""
    number = int(re.sub(r"\D", "", arch))
    if number >= 100:
        return 86
    if number >= 90:
        return 80
    return 78


@functools.cache
def _target_machine(arch: str):
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # 32-bit pointers to shared memory, as Triton's: a shared address is one register, not two (the
    # cross-entropy kernel: 40 registers per thread -> 32, which is 8 programs of 256 threads per SM)
    llvm.set_option("", "--nvptx-short-ptr")
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=f"+ptx{ptx_version(arch)}", opt=3)


def contract(llir: str) -> str:
    """Marks fp32/fp64 multiplies and adds contractible, so ``x * y + z`` becomes one ``fma`` as
    under Triton with ``enable_fp_fusion`` (its default)."""
    return _CONTRACTED.sub(lambda m: f"= {m.group(1)} contract {m.group(2)} ", llir)


def compile_to_ptx(llir: str, arch: str, kernel_name: str) -> str:
    """The optimized PTX of the LLVM IR text ``llir`` for ``arch``."""
    import llvmlite.binding as llvm

    tm = _target_machine(arch)
    uses_libdevice = re.search(r"@\"?__nv_", llir) is not None
    if uses_libdevice:
        llir += '\n!llvm.module.flags = !{!900}\n!900 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n'
    module = llvm.parse_assembly(llir)
    module.triple = TRIPLE
    module.data_layout = str(tm.target_data)
    if uses_libdevice:
        library = llvm.parse_bitcode(_libdevice_bitcode())
        library.triple = TRIPLE
        library.data_layout = str(tm.target_data)
        module.link_in(library)
        for fn in module.functions:
            if fn.name != kernel_name and not fn.is_declaration:
                fn.linkage = llvm.Linkage.internal
        for gv in module.global_variables:
            if not gv.is_declaration and gv.name.startswith("__"):
                gv.linkage = llvm.Linkage.internal
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)
    return tm.emit_assembly(module)


@dataclass(frozen=True)
class PtxasReport:
    """What ``ptxas -v`` says of a kernel: the registers each thread uses, the bytes of its stack
    frame and of what it spills to local memory (stored and loaded back), and ptxas's warnings (a
    wgmma pipeline it serialized, for one). ``text``: the report as ptxas wrote it."""

    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    warnings: tuple[str, ...] = ()
    text: str = ""


_REGISTERS = re.compile(r"Used (\d+) registers")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_report(text: str) -> PtxasReport:
    """The report of ``ptxas -v`` on a module of one kernel."""
    registers = _REGISTERS.search(text)
    frame = _FRAME.search(text)
    if registers is None or frame is None:
        raise InternalError(f"ptxas -v did not report registers and spills as expected:\n{text.strip()[:2000]}")
    warnings = tuple(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("ptxas warning"))
    return PtxasReport(int(registers.group(1)), int(frame.group(1)), int(frame.group(2)), int(frame.group(3)),
                       warnings, text)


def assemble(ptx: str, arch: str) -> Optional[tuple[bytes, PtxasReport]]:
    """The cubin of ``ptx`` from ``ptxas -v`` and its report (registers, spills, warnings); None when
    there is no ptxas (the driver compiles the PTX itself at load). A PTX that ptxas refuses is our
    bug: an InternalError with what it said."""
    ptxas = ptxas_path()
    if ptxas is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "kernel.ptx")
        target = os.path.join(folder, "kernel.cubin")
        pathlib.Path(source).write_text(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", "-O3", "-v", source, "-o", target],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InternalError(f"ptxas refused the generated PTX for {arch} (a bug in tritium's CUDA backend):\n"
                                f"{done.stderr.strip()[:2000]}")
        return pathlib.Path(target).read_bytes(), parse_report(done.stdout + done.stderr)
