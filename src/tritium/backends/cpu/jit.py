"""LLVM for the host CPU: the target machine, the optimization pipeline, objects and their loading.

The target is the host's CPU name and feature string as llvmlite reports them; both are part of
the compiled objects' cache key (``host_target``). Objects are loaded into one MCJIT engine each,
which keeps their code alive as long as the executable holding it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading

import llvmlite.binding as llvm

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


def optimize(llvm_ir: str):
    """The parsed, verified and optimized (O3, loop and SLP vectorization) module of ``llvm_ir``."""
    _initialized()
    from ...numerics.vector_math import shared_functions_ir

    with _lock:
        module = llvm.parse_assembly(llvm_ir)
        if "tritium_" in llvm_ir:  # calls the interpreter's shared fp32 functions: link their bodies
            module.link_in(llvm.parse_assembly(shared_functions_ir()))
        module.verify()
        machine = target_machine()
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        options.loop_unrolling = True
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
        return module


def emit(module) -> tuple[bytes, str]:
    """(object code, assembly text) of an optimized module."""
    machine = target_machine()
    with _lock:
        return machine.emit_object(module), machine.emit_assembly(module)


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
