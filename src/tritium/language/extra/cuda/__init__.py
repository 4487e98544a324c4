"""Triton import path ``triton.language.extra.cuda``: the CUDA spelling of ``tl.extra.libdevice``.

For code written ``from triton.language.extra.cuda import libdevice``.
"""
from . import libdevice  # noqa: F401
