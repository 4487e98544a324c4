"""Triton import path ``triton.runtime.errors``: the errors raised around launching kernels."""
from ..errors import (  # noqa: F401
    InterpreterError, OutOfBoundsError, OutOfResources, PTXASError, TritonError,
)

__all__ = ["InterpreterError", "OutOfBoundsError", "OutOfResources", "PTXASError", "TritonError"]
