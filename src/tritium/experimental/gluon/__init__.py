"""``triton.experimental.gluon``, far enough for files that define Gluon kernels to import.

Gluon is Triton's lower-level language (explicit layouts, shared memory, warp specialization),
compiled for a GPU only: Triton's interpreter does not run it either. ``@gluon.jit`` here
accepts the definition, so a test module or script that also holds ``triton.language`` kernels
imports and runs those; launching or compiling a Gluon kernel raises ``NotImplementedError``.
"""
from __future__ import annotations

import functools

from . import language  # noqa: F401


class GluonJITFunction:
    """A ``@gluon.jit`` function: kept, never compiled."""

    def __init__(self, fn, **options):
        import inspect

        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
            raise TypeError(f"{fn.__name__}: JIT functions do not support **kwargs; list the parameters")
        self.fn = fn
        self.options = options
        self.__name__ = getattr(fn, "__name__", "gluon_kernel")
        functools.update_wrapper(self, fn)

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError(
            f"Gluon kernel '{self.__name__}' cannot run: tritium runs triton.language kernels only (Gluon kernels "
            "need a GPU compiler, and Triton's interpreter does not run them either)")

    def __getitem__(self, grid):
        return self._unsupported

    __call__ = run = warmup = _unsupported

    def __repr__(self) -> str:
        return f"GluonJITFunction({self.__name__})"


def jit(fn=None, **options):
    """``@gluon.jit`` and ``@gluon.jit(...)``."""
    if fn is None:
        return lambda f: GluonJITFunction(f, **options)
    return GluonJITFunction(fn, **options)


def constexpr_function(fn):
    return fn


__all__ = ["GluonJITFunction", "constexpr_function", "jit", "language"]
