"""Triton import path ``triton.backends.compiler``: the description of a compilation target,
``GPUTarget``, and ``BaseBackend``, the compiler backend object of ``make_backend``."""
from .base import BaseBackend, GPUTarget  # noqa: F401

__all__ = ["BaseBackend", "GPUTarget"]
