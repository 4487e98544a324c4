"""LLVM for the host CPU: the target machine, the optimization pipeline, objects and their loading.

The target is the host's CPU name and feature string as llvmlite reports them; both are part of
the compiled objects' cache key (``host_target``). Objects are loaded into one MCJIT engine each,
which keeps their code alive as long as the executable holding it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import pickle
import threading

import llvmlite.binding as llvm

from ..llvm import host

_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _initialized() -> bool:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)
    return True


@functools.lru_cache(maxsize=None)
def host_cpu() -> tuple[str, str, str]:
    """(triple, CPU name, feature string) of this machine."""
    _initialized()
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _new_target_machine(jit: bool = False):
    triple, cpu, features = host_cpu()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default",
                                        jit=jit)


@functools.lru_cache(maxsize=None)
def target_machine():
    """The machine code is generated for (shared; an execution engine gets its own, since it takes
    ownership of the one it is given and frees it with itself)."""
    return _new_target_machine()


def optimize(llvm_ir: str, vectorize: bool = True):
    """The parsed, verified and optimized (O3, loop and SLP vectorization) module of ``llvm_ir``."""
    _initialized()
    with _lock:
        return _optimize_unlocked(llvm_ir, vectorize)


@functools.lru_cache(maxsize=None)
def wide_vectors() -> bool:
    """True on AVX-512 hosts: loops use 512-bit vectors and math scales with ``vscalefps``."""
    return host.has_avx512(host_cpu()[2])


def _optimize_unlocked(llvm_ir: str, vectorize: bool):
    if wide_vectors():
        llvm_ir = host.prefer_wide_vectors(llvm_ir)
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    machine = target_machine()
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = vectorize
    options.slp_vectorization = vectorize
    options.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    for function in module.functions:  # a call to a symbol the process lacks would jump to address 0
        if function.is_declaration and not function.name.startswith("llvm.") and \
                not llvm.address_of_symbol(function.name):
            raise RuntimeError(f"the compiled kernel calls {function.name}, which this process does not define")
    return module


def assembly(llvm_ir: str) -> str:
    """The optimized machine code of ``llvm_ir`` as text (compiled again: asked for rarely)."""
    module = optimize(llvm_ir)
    with _lock:
        return target_machine().emit_assembly(module)


def emit(module) -> tuple[bytes, str]:
    """(object code, assembly text) of an optimized module."""
    machine = target_machine()
    with _lock:
        return machine.emit_object(module), machine.emit_assembly(module)


def compile_to_object(llvm_ir: str) -> bytes:
    """The object code of ``llvm_ir``, optimized. LLVM stops the whole process when one of its
    internal assertions fails (some loops trip the vectorizer's cost models), so where the system can
    fork, the compilation runs in a forked child: a child that dies is retried without vectorization,
    and only when that dies too is it an error, with what LLVM printed."""
    if not hasattr(os, "fork"):
        return emit(optimize(llvm_ir))[0]
    failures = []
    for vectorize in (True, False):
        result, message = _in_child(llvm_ir, vectorize)
        if result is not None:
            return result
        failures.append(message)
    raise RuntimeError("LLVM failed on this kernel (a bug in LLVM or in the IR tritium generated): "
                       + failures[-1].strip()[-2000:])


def _in_child(llvm_ir: str, vectorize: bool):
    """(object, "") from a forked child, or (None, what the child printed on stderr)."""
    _initialized()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    with _lock:
        pid = os.fork()
        if pid == 0:  # the child: compile, send, leave without running the parent's exit handlers
            status = 3
            try:
                os.close(out_read)
                os.close(err_read)
                os.dup2(err_write, 2)
                import faulthandler

                faulthandler.disable()  # an abort inside LLVM is reported by the parent, once
                module = _optimize_unlocked(llvm_ir, vectorize)
                machine = target_machine()
                payload = pickle.dumps(machine.emit_object(module))
                with os.fdopen(out_write, "wb") as pipe:
                    pipe.write(payload)
                status = 0
            finally:
                os._exit(status)
    os.close(out_write)
    os.close(err_write)
    with os.fdopen(out_read, "rb") as pipe, os.fdopen(err_read, "rb") as errors:
        payload = pipe.read()
        printed = errors.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status == 0 and payload:
        return pickle.loads(payload), ""
    return None, printed


class LoadedObject:
    """An object file linked into the process: ``address(name)`` of its functions."""

    def __init__(self, obj: bytes):
        _initialized()
        with _lock:
            self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _new_target_machine(jit=True))
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()

    def address(self, name: str) -> int:
        with _lock:
            return self._engine.get_function_address(name)


def add_symbol(name: str, address: int) -> None:
    _initialized()
    llvm.add_symbol(name, address)
