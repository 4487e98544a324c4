"""Language functions that state what a kernel expects of its values: ``tl.expect_zero``."""
from __future__ import annotations

from .core import _semantic, builtin, unwrap


@builtin
def expect_zero(x, mask):
    """Returns ``x`` and states that it is zero wherever ``mask`` is true (values expected to have
    underflowed to zero). As in Triton, only debug mode checks it (``TRITIUM_DEBUG=1``,
    ``debug=True``): a nonzero lane under the mask is a DeviceAssertionError naming the program and
    lane; without debug mode nothing is checked and ``x`` is returned unchanged."""
    sem = _semantic()
    x = unwrap(x)
    mask = sem.to_tensor(unwrap(mask))
    holds = sem.logical("or", sem.compare("eq", sem.to_tensor(x), 0), sem.logical_not(mask))
    sem.device_assert(holds, "expect_zero expected x == 0 where mask is true", debug_only=True)
    return x
