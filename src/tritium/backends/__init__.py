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

from dataclasses import dataclass


@dataclass(frozen=True)
class TritonBackend:
    """One entry of ``triton.backends.backends``: the compiler and driver classes."""

    compiler: type
    driver: type


# filled by the runtime, which holds the driver classes (runtime/driver.py registers "cpu")
backends: dict = {}
