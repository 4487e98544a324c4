"""Triton import path ``triton.compiler.compiler``: ``CompiledKernel`` (what ``kernel.warmup(...)``
returns), ``ASTSource``, and ``triton_key()``, the string that names this compiler in cache keys."""
from __future__ import annotations

from .compiled_kernel import CompiledKernel  # noqa: F401
from .source import ASTSource  # noqa: F401

__all__ = ["ASTSource", "CompiledKernel", "triton_key"]


def triton_key() -> str:
    from ..version import __tritium_version__, __version__

    return f"tritium-{__tritium_version__}-triton-{__version__}"
