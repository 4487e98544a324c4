"""Backends consume the tile IR. Each lives in its own folder and has one entry in ``registry``.

``base`` says what a backend is (the ``Backend`` protocol, its ``Options`` record, ``GPUTarget``);
``registry`` lists the backends and picks the one serving a launch's device.

As ``triton.backends``, this package also answers what code written for Triton asks of it:
``backends`` maps the devices tritium compiles for to a record of a compiler class
(``backends.compiler.BaseBackend``) and a driver class, as Triton maps its plugins (``"nvidia"``,
``"amd"``, and ``"cpu"`` for the triton-cpu fork). tritium compiles for the host, so it holds
``"cpu"``; torch reads it (``torch.utils._triton.has_triton()`` is then True), recognises tritium's
kernels inside compiled graphs, and with ``torch._inductor.config.cpu_backend = "triton"`` has
Inductor write Triton kernels for CPU tensors (docs/torch-compile.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TritonBackend:
    """One entry of ``triton.backends.backends``: the compiler and driver classes."""

    compiler: type
    driver: type


class _Backends(Mapping):
    """The entries, made on first use (the driver lives in the runtime, above this package)."""

    _NAMES = ("cpu",)

    def __getitem__(self, name: str) -> TritonBackend:
        if name not in self._NAMES:
            raise KeyError(name)
        from ..runtime.driver import CPUDriver
        from .compiler import BaseBackend

        return TritonBackend(compiler=BaseBackend, driver=CPUDriver)

    def __iter__(self):
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)

    def __repr__(self) -> str:
        return repr(dict(self))


backends: Mapping = _Backends()
