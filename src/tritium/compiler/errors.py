"""Triton import path ``triton.compiler.errors``: the errors raised while compiling a kernel."""
from ..errors import (  # noqa: F401
    CompilationError, CompileTimeAssertionFailure, TritonError, UnsupportedLanguageConstruct,
)

__all__ = ["CompilationError", "CompileTimeAssertionFailure", "TritonError", "UnsupportedLanguageConstruct"]
