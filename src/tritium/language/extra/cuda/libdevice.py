"""Triton import path ``triton.language.extra.cuda.libdevice``: the functions of ``tl.extra.libdevice``."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __all__  # noqa: F401
