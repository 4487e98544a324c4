"""``tl.extra``: vendor math libraries. ``libdevice`` is NVIDIA's (also reachable as ``extra.cuda.libdevice``)."""
from . import libdevice  # noqa: F401
from . import cuda  # noqa: F401
