"""Triton 3.9's small ``tl`` functions that spell out what an operator or a method does:
``to_tensor``, ``add``, ``sub``, ``mul``, ``load_tensor_descriptor``, ``store_tensor_descriptor``, and
the ``TRITON_MAX_TENSOR_NUMEL`` limit on a block's elements."""
from __future__ import annotations

from .._utils import TRITON_MAX_TENSOR_NUMEL  # noqa: F401  (tl.TRITON_MAX_TENSOR_NUMEL, as in Triton)
from .core import _semantic, builtin, unwrap


@builtin
def to_tensor(x):
    """``x`` as a tensor: a tensor unchanged; a Python bool an int1, an int the first of int32, uint32,
    int64, uint64 that holds it, a float an fp32 (fp64 outside fp32's range)."""
    return _semantic().to_tensor(unwrap(x))


@builtin
def add(x, y, sanitize_overflow=True):
    """``x + y`` (pointers plus offsets too). ``sanitize_overflow`` is accepted for Triton's
    signature: debug mode checks int32 overflow of every addition either way."""
    return _semantic().add(unwrap(x), unwrap(y))


@builtin
def sub(x, y, sanitize_overflow=True):
    """``x - y``; ``sanitize_overflow`` as for ``add``."""
    return _semantic().sub(unwrap(x), unwrap(y))


@builtin
def mul(x, y, sanitize_overflow=True):
    """``x * y``; ``sanitize_overflow`` as for ``add``."""
    return _semantic().mul(unwrap(x), unwrap(y))


@builtin
def load_tensor_descriptor(desc, offsets):
    """``desc.load(offsets)``: the block of the tensor descriptor at ``offsets``."""
    return desc.load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """``desc.store(offsets, value)``."""
    return desc.store(offsets, value)


@builtin
def reduce_or(input, axis, keep_dims=False):
    """The bitwise or of ``input``'s elements along ``axis`` (integers and booleans only, as in Triton)."""
    from ..compiler.ir.ops import Region
    from .core import tensor

    sem = _semantic()
    input = sem.to_tensor(unwrap(input))
    if not input.dtype.is_int():
        raise TypeError(f"reduce_or only supported for integers, got {input.dtype}")
    combine = Region([input.dtype, input.dtype])
    with sem.builder.insert_into(combine):
        a, b = (tensor(v, v.type) for v in combine.args)
        sem._create("yield", [sem.bitwise("or", a, b)], [])
    return sem.reduce([input], unwrap(axis), "custom", combine=combine, keep_dims=bool(unwrap(keep_dims)))[0]


class condition:
    """``while tl.condition(c, disable_licm=False):`` is ``while c:``. ``disable_licm`` asks Triton's
    compiler not to hoist loop-invariant code out of the loop; tritium accepts it and keeps its passes'
    own choice (hoisting never changes what a kernel computes)."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = bool(unwrap(disable_licm))
