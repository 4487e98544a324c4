"""Triton import path ``triton.backends.compiler``: ``GPUTarget`` and ``BaseBackend``, the object
``triton.compiler.compiler.make_backend(target)`` returns.

Code generators written for Triton ask a compiler backend for a few things before they compile:
a hash that names the compiler in their cache keys, the options record a kernel would get, and
how arguments specialize. ``BaseBackend`` answers them for whichever tritium backend serves the
target's device (``registry.for_device``); compiling itself goes through ``triton.compile``.
"""
from __future__ import annotations

from typing import Any

from .base import GPUTarget


class BaseBackend:
    """The compiler backend for ``target`` (a ``GPUTarget``): ``hash()``, ``parse_options(opts)``
    (the serving backend's options record: ``num_warps``, ``num_stages``, ``extern_libs``...),
    ``binary_ext`` (the name of the stage that is the compiled binary), ``pack_metadata``,
    ``get_codegen_implementation`` / ``get_module_map`` (none: tritium's language has no
    target-specific modules) and ``get_arg_specialization`` (Triton's 16-byte rule)."""

    def __init__(self, target: GPUTarget):
        self.target = target

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        from . import registry

        try:
            registry.for_device(target.backend)
        except Exception:
            return False
        return True

    def _backend(self):
        from .. import config
        from . import registry

        return registry.for_device(self.target.backend, config.backend_name() or None)

    @property
    def name(self) -> str:
        return self._backend().name

    @property
    def binary_ext(self) -> str:
        return self._backend().stages[-1]

    def hash(self) -> str:
        from ..compiler.compiler import triton_key

        backend = self._backend()
        return f"{triton_key()}-{backend.name}-{backend.version}-{self.target.backend}-{self.target.arch}"

    def parse_options(self, options: dict) -> Any:
        backend = self._backend()
        known = {k: v for k, v in dict(options).items() if k in type(backend.parse_options({})).names()}
        return backend.parse_options(known)

    def pack_metadata(self, metadata) -> tuple:
        return (getattr(metadata, "num_warps", 4), getattr(metadata, "num_ctas", 1), getattr(metadata, "shared", 0))

    def get_codegen_implementation(self, options=None) -> dict:
        return {}

    def get_module_map(self) -> dict:
        return {}

    def load_dialects(self, context) -> None:
        """Triton registers its MLIR dialects here; tritium has none."""

    def get_arg_specialization(self, arg, ty: str, **kwargs):
        """Triton's rule: an integer or pointer divisible by 16 is specialized as such."""
        value = arg.data_ptr() if hasattr(arg, "data_ptr") else arg
        if isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0:
            return "D"
        return None

    def __repr__(self) -> str:
        return f"BaseBackend({self.target})"


__all__ = ["BaseBackend", "GPUTarget"]
