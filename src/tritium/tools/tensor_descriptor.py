"""``TensorDescriptor``: a tensor and the tile shape a kernel reads and writes it in, built on the host.

Passed to a kernel, it arrives as a tensor descriptor (``tl.tensor_descriptor``): the kernel calls
``desc.load(offsets)`` and ``desc.store(offsets, value)`` as with one made by
``tl.make_tensor_descriptor``. The checks are Triton's (which a GPU's TMA unit needs): a 16-byte
aligned base, 16-byte aligned strides except the last, which must be 1, power-of-two block dims.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

from .._utils import is_power_of_two


def _element_size(base) -> int:
    size = getattr(base, "element_size", None)
    if callable(size):
        return int(size())
    return int(base.dtype.itemsize)


def _address(base) -> int:
    if hasattr(base, "data_ptr"):
        return int(base.data_ptr())
    return int(base.__array_interface__["data"][0])


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"a TensorDescriptor has 1 to 5 dimensions, got {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"rank mismatch: shape {self.shape}, strides {self.strides}, "
                             f"block_shape {self.block_shape}")
        for i, b in enumerate(self.block_shape):
            if not is_power_of_two(b):
                raise ValueError(f"block_shape[{i}] must be a power of 2, got {b}")
        if _address(self.base) % 16:
            raise ValueError("a TensorDescriptor's base must be 16-byte aligned (as a GPU's TMA requires)")
        size = _element_size(self.base)
        for i, stride in enumerate(self.strides[:-1]):
            if (stride * size) % 16:
                raise ValueError(f"a TensorDescriptor's strides must be 16-byte aligned, but stride {i} is "
                                 f"{stride} elements of {size} bytes")
        if self.strides[-1] != 1:
            raise ValueError("a TensorDescriptor's last dimension must be contiguous (stride 1), "
                             f"got {self.strides[-1]}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding="zero") -> TensorDescriptor:
        """A descriptor of the whole of ``tensor`` (a torch tensor, or a numpy array)."""
        if hasattr(tensor, "stride") and callable(tensor.stride):
            strides = list(tensor.stride())
        else:
            strides = [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding)
