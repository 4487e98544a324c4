"""Triton import path ``triton.compiler.compiler``: ``CompiledKernel`` (what ``kernel.warmup(...)``
returns), ``ASTSource``, ``triton_key()``, the string that names this compiler in cache keys, and
``make_backend(target)``, the compiler backend object for a target (``backends.compiler``)."""
from __future__ import annotations

from .compiled_kernel import CompiledKernel  # noqa: F401
from .source import ASTSource  # noqa: F401

__all__ = ["ASTSource", "CompiledKernel", "make_backend", "triton_key"]


def make_backend(target):
    """The compiler backend object for ``target`` (a ``GPUTarget``), as Triton's ``make_backend``:
    a ``backends.base.BaseBackend``. The compiler knows no backend: the runtime, imported with
    the package, supplies the factory (runtime/compilation.py)."""
    return make_backend.factory(target)


def triton_key() -> str:
    from ..version import __tritium_version__, __version__

    return f"tritium-{__tritium_version__}-triton-{__version__}"
