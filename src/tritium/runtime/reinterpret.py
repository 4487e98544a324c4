"""``triton.reinterpret(tensor, dtype)``: a tensor's memory passed to kernels as another dtype.

Used to hand kernels element types torch has no tensors of (fp8 variants stored as uint8, say):
the kernel sees a pointer to ``dtype``; the bytes are the base tensor's. Widths must match.
"""
from __future__ import annotations

from ..compiler.ir import types as T


class TensorWrapper:
    """A tensor seen as elements of another tritium dtype of the same width."""

    def __init__(self, base, dtype: T.dtype):
        self.base = base
        self.data = base
        self.dtype = dtype
        self.shape = base.shape
        self.device = getattr(base, "device", "cpu")

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def numel(self) -> int:
        return self.base.numel()

    def dim(self) -> int:
        return self.base.dim()

    def size(self, *args):
        return self.base.size(*args)

    def cpu(self) -> "TensorWrapper":
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device) -> "TensorWrapper":
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> "TensorWrapper":
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other) -> "TensorWrapper":
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def new_empty(self, sizes) -> "TensorWrapper":
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """``tensor``'s memory as elements of ``dtype``: a ``TensorWrapper`` whose ``.base`` is the tensor,
    as Triton returns (also when ``dtype`` is the tensor's own); reinterpreting a wrapper gives its base
    back for the base's own dtype, else a wrapper of the base."""
    from .arguments import tensor_view

    base = tensor.base if isinstance(tensor, TensorWrapper) else tensor
    view = tensor_view(base)
    if view is None:
        raise TypeError(f"reinterpret needs a tensor, got {type(tensor).__name__}")
    if not isinstance(dtype, T.dtype):
        raise TypeError(f"reinterpret needs a tritium dtype such as tl.float8e5, got {dtype!r}")
    if dtype.itemsize != view.dtype.itemsize:
        raise ValueError(f"cannot reinterpret {view.dtype} memory as {dtype}: the element widths differ")
    if isinstance(tensor, TensorWrapper) and dtype == view.dtype:
        return base
    return TensorWrapper(base, dtype)
