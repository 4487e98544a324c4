"""The runtime: @jit functions, specialization, compilation caches and launches."""
from .jit import JITFunction, jit

__all__ = ["JITFunction", "jit"]
