"""Triton import path ``triton.compiler.code_generator``: the frontend's AST visitor."""
from .frontend import CodeGenerator  # noqa: F401

__all__ = ["CodeGenerator"]
