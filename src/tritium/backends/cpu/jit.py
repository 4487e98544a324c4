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
import re
import struct
import tempfile
import threading

import llvmlite.binding as llvm

from ..llvm import host

_lock = threading.Lock()


@functools.cache
def _initialized() -> bool:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)
    return True


@functools.cache
def host_cpu() -> tuple[str, str, str]:
    """(triple, CPU name, feature string) of this machine."""
    _initialized()
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _new_target_machine(jit: bool = False):
    triple, cpu, features = host_cpu()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default",
                                        jit=jit)


@functools.cache
def target_machine():
    """The machine code is generated for (shared; an execution engine gets its own, since it takes
    ownership of the one it is given and frees it with itself)."""
    return _new_target_machine()


def optimize(llvm_ir: str, vectorize: bool = True):
    """The parsed, verified and optimized (O3, loop and SLP vectorization) module of ``llvm_ir``."""
    _check_symbols(llvm_ir)
    with _lock:
        return _optimize_unlocked(llvm_ir, vectorize)


@functools.cache
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
    return module


@functools.cache
def quick_target_machine():
    """The machine of the quick tier: LLVM's fast instruction selector and register allocator."""
    triple, cpu, features = host_cpu()
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, opt=0, reloc="pic",
                                                                 codemodel="default")


def _quick_object(llvm_ir: str) -> bytes:
    """The quick tier's object: the helper functions inlined, values out of memory into registers
    (SROA), instructions combined, the control flow simplified; no loop optimization, no
    vectorization (scalar code, 3-10x slower than the full pipeline's, compiled 5-8x faster)."""
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    machine = quick_target_machine()
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=0))
    passes = llvm.create_new_module_pass_manager()
    passes.add_always_inliner_pass()
    passes.add_sroa_pass()
    passes.add_instruction_combine_pass()
    passes.add_simplify_cfg_pass()
    passes.run(module, builder)
    return machine.emit_object(module)


def assembly(llvm_ir: str) -> str:
    """The optimized machine code of ``llvm_ir`` as text (compiled again: asked for rarely)."""
    module = optimize(llvm_ir)
    with _lock:
        return target_machine().emit_assembly(module)


def emit_object(module) -> bytes:
    """The object code of an optimized module."""
    with _lock:
        return target_machine().emit_object(module)


# What a compile request asks the child for.
_FULL, _FULL_SCALAR, _QUICK = 0, 1, 2


def compile_to_object(llvm_ir: str, background: bool = False) -> bytes:
    """The object code of ``llvm_ir``, optimized. LLVM stops the whole process when one of its
    internal assertions fails (some loops trip the vectorizer's cost models), so where the system can
    fork, the compilation runs in a child process (``_CompileServer``): a child that dies is retried
    without vectorization, and only when that dies too is it an error, with what LLVM printed.
    ``background``: through a second child, so that the quick compilations of other kernels, which
    go through the first, never wait behind this one."""
    _check_symbols(llvm_ir)
    if not hasattr(os, "fork"):
        return emit_object(optimize(llvm_ir))
    failures = []
    for level in (_FULL, _FULL_SCALAR):
        result, message = (_background_server if background else _server).compile(llvm_ir, level)
        if result is not None:
            return result
        failures.append(message)
    raise RuntimeError("LLVM failed on this kernel (a bug in LLVM or in the IR tritium generated): "
                       + failures[-1].strip()[-2000:])


def compile_quick(llvm_ir: str):
    """The quick tier's object code of ``llvm_ir`` (``_quick_object``), or None where it cannot be
    made (no fork; LLVM failed: the caller compiles fully instead)."""
    _check_symbols(llvm_ir)
    if not hasattr(os, "fork"):
        return None
    _background_server.start()  # forked here, by the compiling thread, not later by the background one
    return _server.compile(llvm_ir, _QUICK)[0]


_DECLARED = re.compile(r'^declare [^@\n]*@"?([\w.$]+)"?\(', re.MULTILINE)


def _check_symbols(llvm_ir: str) -> None:
    """A call to a symbol the process lacks would jump to address 0: refused before compiling (in
    this process, which has the symbols the launcher registers; the compiling child may be older)."""
    _initialized()
    for name in _DECLARED.findall(llvm_ir):
        if not name.startswith("llvm.") and not llvm.address_of_symbol(name):
            raise RuntimeError(f"the compiled kernel calls {name}, which this process does not define")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd``, or fewer when it reaches its end."""
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class _CompileServer:
    """A child process, forked at the first compilation, that optimizes and emits modules sent
    through a pipe: one fork per process instead of one per kernel (a fork of a process that has
    torch loaded costs 10-30 ms). A child that dies (an LLVM assertion) is reported with what it
    printed and replaced at the next request. The pipes are used through their descriptors, not
    Python's buffered files, whose locks a thread blocked in a read would hold across a fork."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pid = None
        self.descriptors = ()  # requests (write end), replies (read end), the child's stderr file
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """In a forked child of this process: the server is the parent's (its pipes are closed here,
        so that it still sees the parent close them); a new one starts when this child compiles."""
        self.lock = threading.Lock()
        self._close()
        self.pid = None

    def _close(self) -> None:
        for fd in self.descriptors:
            try:
                os.close(fd)
            except OSError:
                pass
        self.descriptors = ()

    def _start(self) -> None:
        _initialized()
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        errors, errors_path = tempfile.mkstemp(prefix="tritium-llvm-")
        os.unlink(errors_path)
        with _lock:
            pid = os.fork()
        if pid == 0:  # the child: serve until the parent closes the pipe; never run the parent's exit handlers
            try:
                os.close(requests_write)
                os.close(replies_read)
                os.dup2(errors, 2)
                _close_inherited({0, 1, 2, requests_read, replies_write})
                import faulthandler

                faulthandler.disable()  # an abort inside LLVM is reported by the parent, once
                _serve(requests_read, replies_write)
            except BaseException:  # noqa: BLE001 - the parent reports what was printed
                import traceback

                traceback.print_exc()
            finally:
                os._exit(0)
        os.close(requests_read)
        os.close(replies_write)
        self.pid = pid
        self.descriptors = (requests_write, replies_read, errors)

    def start(self) -> None:
        """Forks the child now, if it is not running (without waiting for a compilation in flight:
        a running child is all this asks for)."""
        if self.pid is not None:
            return
        with self.lock:
            if self.pid is None:
                self._start()

    def compile(self, llvm_ir: str, level: int):
        """(object, "") or (None, what the child printed before it died). ``level``: _FULL,
        _FULL_SCALAR (no vectorization) or _QUICK."""
        with self.lock:
            if self.pid is None:
                self._start()
            requests, replies, errors = self.descriptors
            data = llvm_ir.encode()
            try:
                _write_all(requests, struct.pack("<QB", len(data), level) + data)
                header = _read_exactly(replies, 8)
                if len(header) == 8:
                    size = struct.unpack("<Q", header)[0]
                    payload = _read_exactly(replies, size)
                    if len(payload) == size:
                        return payload, ""
            except OSError:
                pass
            # the child died
            os.lseek(errors, 0, os.SEEK_SET)
            printed = b""
            while True:
                part = os.read(errors, 1 << 16)
                if not part:
                    break
                printed += part
            self._close()
            os.waitpid(self.pid, 0)
            self.pid = None
            return None, printed.decode(errors="replace")


def _close_inherited(keep: set) -> None:
    """Closes, in a compile child, every file descriptor it inherited but ``keep``: a pipe another
    thread of the parent was creating for a subprocess at the moment of the fork would otherwise
    stay open here, and the parent would wait forever for its end."""
    try:
        inherited = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        inherited = list(range(3, 1024))
    for fd in inherited:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(requests: int, replies: int) -> None:
    with os.fdopen(requests, "rb") as inbox, os.fdopen(replies, "wb") as outbox:
        while True:
            header = inbox.read(9)
            if len(header) < 9:
                return
            size, level = struct.unpack("<QB", header)
            llvm_ir = inbox.read(size).decode()
            if level == _QUICK:
                obj = _quick_object(llvm_ir)
            else:
                obj = target_machine().emit_object(_optimize_unlocked(llvm_ir, level == _FULL))
            outbox.write(struct.pack("<Q", len(obj)) + obj)
            outbox.flush()


def _new_lock_after_fork() -> None:
    """A forked child's LLVM lock: the background thread that may have held it at the fork is gone."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)
_server = _CompileServer()
_background_server = _CompileServer()  # the full compilations that replace quick code (launcher.py)


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
