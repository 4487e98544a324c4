"""Triton import path ``triton.backends.compiler``: the description of a compilation target, ``GPUTarget``."""
from .base import GPUTarget  # noqa: F401

__all__ = ["GPUTarget"]
