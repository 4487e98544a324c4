"""Backends that exist only for the tests of the backend seam, registered by the tests that use them.

Each wraps the interpreter's executable, so results are real; they differ in what the seam must
handle: a second backend serving host memory (``CopyBackend``), one whose launches write a wrong
value (``WrongBackend``, for TRITIUM_VALIDATE), and one with a stage cached on disk
(``CachingBackend``) that counts how often it compiles and how often it loads.
"""
from __future__ import annotations

import ctypes

import numpy as np

from tritium.backends.base import Backend
from tritium.backends.interpreter import Executable as InterpreterExecutable
from tritium.compiler.ir import types as T


class CopyBackend(Backend):
    name = "copy"
    version = "1"
    devices = frozenset({"cpu"})
    stages = ("ttir", "summary")
    compiled = 0

    def compile(self, fn, options, target):
        type(self).compiled += 1
        executable = InterpreterExecutable(fn, options)
        executable.asm["summary"] = f"{fn.name}: {len(list(fn.walk()))} ops for {target.backend}"
        return executable


class _CorruptingExecutable:
    """Runs the interpreter, then adds 1 to the first element of the last pointer argument."""

    def __init__(self, inner):
        self.inner = inner
        self.asm = inner.asm

    def launch(self, grid, args, stream=None, *, debug=False):
        self.inner.launch(grid, args, stream, debug=debug)
        _, ty, view = [a for a in args if isinstance(a.type, T.pointer_type)][-1]
        element = np.ctypeslib.as_array((ctypes.c_uint8 * ty.element_ty.itemsize).from_address(
            view.address)).view(ty.element_ty.numpy)
        element[0] = element[0] + 1


class WrongBackend(Backend):
    name = "wrong"
    version = "1"
    devices = frozenset({"cpu"})
    stages = ("ttir",)

    def compile(self, fn, options, target):
        return _CorruptingExecutable(InterpreterExecutable(fn, options))


class CachingBackend(Backend):
    """Its stage "blob" (bytes) is what ``load`` rebuilds the executable from."""

    name = "caching"
    version = "7"
    devices = frozenset({"cpu"})
    stages = ("ttir", "blob")
    cached_stages = ("blob",)
    compiled = 0
    loaded = 0

    def compile(self, fn, options, target):
        type(self).compiled += 1
        executable = InterpreterExecutable(fn, options)
        executable.asm["blob"] = fn.name.encode() + b"\x00\xff" + bytes(range(16))
        return executable

    def load(self, fn, asm, options, target):
        assert asm["blob"] == fn.name.encode() + b"\x00\xff" + bytes(range(16)), "a damaged entry reached load"
        type(self).loaded += 1
        executable = InterpreterExecutable(fn, options)
        executable.asm["blob"] = asm["blob"]
        return executable


class UnavailableBackend(Backend):
    name = "unavailable"
    version = "1"
    devices = frozenset({"cpu"})
    stages = ("ttir",)

    def unavailable_reason(self):
        return "it needs a library that is not installed"

    def compile(self, fn, options, target):
        raise AssertionError("an unavailable backend must never compile")


class _DeviceView:
    """Host memory presented as CUDA memory (``__cuda_array_interface__``), for DeviceBackend."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.__cuda_array_interface__ = {"shape": array.shape, "typestr": array.dtype.str,
                                         "data": (array.ctypes.data, False), "version": 3, "strides": None}


class DeviceBackend(Backend):
    """Serves "cuda" memory that is really host memory (``_DeviceView``): it runs the interpreter on
    it, and copies it to the host with ``copy_to_host`` as a GPU backend does. ``corrupt``: its launches
    add 1 to the first element of the last pointer argument."""

    name = "device"
    version = "1"
    devices = frozenset({"cuda"})
    stages = ("ttir",)
    corrupt = False
    copies = 0

    def compile(self, fn, options, target):
        inner = InterpreterExecutable(fn, options)
        return _CorruptingExecutable(inner) if type(self).corrupt else inner

    def copy_to_host(self, host_address, device_address, nbytes):
        type(self).copies += 1
        ctypes.memmove(host_address, device_address, nbytes)


class _DirectExecutable:
    """The interpreter's executable with a direct launcher that counts the launches it takes."""

    def __init__(self, inner):
        self.inner = inner
        self.asm = inner.asm
        self.direct_launches = 0

    def launch(self, grid, args, stream=None, *, debug=False):
        self.inner.launch(grid, args, stream, debug=debug)

    def direct_launcher(self, arg_names):
        from tritium.backends.base import KernelArgument
        from tritium.runtime.arguments import tensor_view

        types = [a.type for a in self.inner.fn.args]

        def launch(grid3, values) -> bool:
            if 0 in grid3:
                return False
            self.direct_launches += 1
            args = [KernelArgument(name, ty, tensor_view(values[name]) if isinstance(ty, T.pointer_type)
                                   else values[name]) for name, ty in zip(arg_names, types)]
            self.inner.launch(grid3, args)
            return True

        return launch


class DirectBackend(Backend):
    """Serves host memory with a direct launcher (as the CUDA backend has for device memory)."""

    name = "direct"
    version = "1"
    devices = frozenset({"cpu"})
    stages = ("ttir",)

    def compile(self, fn, options, target):
        return _DirectExecutable(InterpreterExecutable(fn, options))
