"""``triton.compiler.compiler``: ``CompiledKernel`` (what ``kernel.warmup(...)`` returns) and
``triton_key()``, the string that names this compiler in cache keys."""
from __future__ import annotations

from ..runtime.jit import CompiledKernel  # noqa: F401

__all__ = ["CompiledKernel", "triton_key"]


def triton_key() -> str:
    from .. import __tritium_version__, __version__

    return f"tritium-{__tritium_version__}-triton-{__version__}"
