"""Triton import path ``triton.language.extra.cuda``: the CUDA spelling of ``tl.extra.libdevice``, and
the special registers and launch facts of ``utils``.

For code written ``from triton.language.extra.cuda import libdevice``.
"""
from . import libdevice  # noqa: F401
from .utils import globaltimer, num_threads, num_warps, smid  # noqa: F401
