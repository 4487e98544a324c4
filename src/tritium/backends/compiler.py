"""``triton.backends.compiler``: the description of a compilation target, ``GPUTarget``."""
from ..runtime.driver import GPUTarget  # noqa: F401

__all__ = ["GPUTarget"]
