"""tritium: Triton's kernel language, implemented in Python, running everywhere.

``import tritium as triton`` and ``import tritium.language as tl`` give the names Triton has.
"""
from __future__ import annotations

from . import language  # noqa: F401
from .errors import (  # noqa: F401
    CompilationError, DeviceAssertionError, HintViolationError, InterpreterError, LaunchError, OutOfBoundsError,
    OutOfResources, TritonError, TritiumError,
)
from . import runtime  # noqa: F401
from . import knobs  # noqa: F401
from .runtime.autotuner import Config, KernelInterface, autotune, heuristics  # noqa: F401
from .runtime.compilation import compile  # noqa: F401,A001  (triton.compile)
from .runtime.jit import JITFunction, constexpr_function, jit  # noqa: F401
from .runtime.reinterpret import TensorWrapper, reinterpret  # noqa: F401
from .runtime.arguments import MockTensor  # noqa: F401
from .language.aggregate import aggregate  # noqa: F401

from .version import __tritium_version__, __version__  # noqa: F401  (see version.py)


def cdiv(x: int, y: int) -> int:
    """Ceiling division of two integers (or of a symbolic size with + and //, as torch passes)."""
    return (x + (y - 1)) // y


def set_allocator(allocator) -> None:
    """Accepted as in Triton, where device-side tensor descriptors (``tl.make_tensor_descriptor``)
    need scratch memory from ``allocator``; tritium's need none."""


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def __getattr__(name):
    # not "ops": `triton.ops` is Triton 2.x's module, which libraries probe for (`hasattr(triton, "ops")`)
    # to tell the versions apart; tritium's own kernels are `import tritium.ops`
    if name in ("testing", "compiler", "compat"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tritium' has no attribute {name!r}")
