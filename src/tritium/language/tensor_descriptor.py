"""Tensor descriptors: ``tl.make_tensor_descriptor`` and descriptors passed from the host.

A descriptor names a strided tensor (base, shape, strides) and the ``block_shape`` of the tiles
read and written through it: ``desc.load(offsets)`` gives the tile whose first element sits at
``offsets``, ``desc.store(offsets, value)`` writes one. As with the TMA units that run them on a
GPU, every dimension is bounds-checked: lanes outside the tensor read 0 (NaN with
``padding_option="nan"``) and are not written. Like block pointers (``block_pointer.py``),
descriptors are compile-time aggregates; their loads and stores are the IR's tile ops.

A ``triton.tools.tensor_descriptor.TensorDescriptor`` passed to a kernel arrives as its base
pointer, its shape (int32) and its strides (int64; the last one is 1, so it is not passed): see
``tensor_descriptor_type``, the type the runtime specializes such an argument to.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..compiler.aggregates import Aggregate
from ..compiler.ir import types as T
from .block_pointer import _block_shape, _scalar_part, _sequence, _store_value
from .core import _semantic, builtin, tensor, unwrap


def _check_offsets(offsets, rank: int) -> tuple:
    items = _sequence(offsets, "the descriptor's offsets")
    if len(items) != rank:
        raise ValueError(f"the descriptor has {rank} dimensions but {len(items)} offsets were given")
    return tuple(_scalar_part(o, "descriptor offsets", True) for o in items)


class tensor_descriptor(Aggregate):
    """A tensor descriptor inside a kernel (made by ``tl.make_tensor_descriptor``, or passed in)."""

    def __init__(self, base: tensor, shape, strides, block_shape, padding: str = "zero"):
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.block_shape = tuple(block_shape)
        self.padding = padding

    def flatten(self):
        rank = len(self.block_shape)

        def rebuild(parts):
            return tensor_descriptor(parts[0], parts[1:1 + rank], parts[1 + rank:], self.block_shape, self.padding)

        return [self.base, *self.shape, *self.strides], rebuild

    def structure(self) -> tuple:
        return ("tensor descriptor", self.block_shape, self.padding)

    @property
    def dtype(self) -> T.dtype:
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return T.block_type(self.dtype, self.block_shape)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype}, block_shape={list(self.block_shape)}>"

    @builtin
    def load(self, offsets, cache_modifier="", eviction_policy=""):
        """The ``block_shape`` tile at ``offsets``; elements outside the tensor read 0 (or NaN)."""
        offsets = _check_offsets(offsets, len(self.block_shape))
        return _semantic().tile_load(self.base, self.shape, self.strides, offsets, self.block_shape, (), (), self.padding,
                                     "descriptor", cache_modifier, eviction_policy)

    @builtin
    def store(self, offsets, value, store_reduce=""):
        """Writes the tile at ``offsets``; elements outside the tensor are not written. The value is
        converted to the descriptor's dtype first, as Triton does (rounding to nearest even)."""
        if unwrap(store_reduce):
            raise NotImplementedError("tensor descriptor stores with store_reduce are not supported yet")
        offsets = _check_offsets(offsets, len(self.block_shape))
        value = unwrap(value)
        if isinstance(value, tensor) and value.dtype != self.dtype:
            value = _semantic().cast(value, self.dtype)
        value = _store_value(value, self.dtype, self.block_shape, "desc.store")
        _semantic().tile_store(self.base, value, self.shape, self.strides, offsets, self.block_shape, (), (),
                               "descriptor")


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of the tensor at ``base`` with ``shape`` and ``strides`` (in elements; the last
    stride must be 1), for tiles of ``block_shape`` (at least 16 bytes along the last dimension)."""
    base = unwrap(base)
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.type.is_block():
        raise TypeError(f"make_tensor_descriptor's base must be a scalar pointer (a tensor argument), got {base!r}")
    element = base.dtype.element_ty
    shape, strides = _sequence(shape, "shape"), _sequence(strides, "strides")
    block = _block_shape(block_shape)
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise ValueError(f"a tensor descriptor has 1 to 5 dimensions, got {rank}")
    if len(strides) != rank:
        raise ValueError(f"expected {rank} strides but got {len(strides)}")
    if len(block) != rank:
        raise ValueError(f"expected block_shape to have {rank} dimensions but got {len(block)}")
    if element.is_bool():
        raise ValueError("int1 tensors are not supported by make_tensor_descriptor")
    row_bytes = block[-1] * element.itemsize
    if row_bytes < 16:
        raise ValueError(f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                         f"{block[-1]} * {element.itemsize} = {row_bytes} bytes")
    last = unwrap(strides[-1])
    if isinstance(last, (tensor, bool)) or last != 1:
        raise ValueError(f"a tensor descriptor's last stride must be 1 (a constexpr), got {last!r}")
    padding = unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise ValueError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not element.is_floating():
        raise ValueError(f"padding_option='nan' needs a floating-point tensor, got {element}")
    shape = tuple(_scalar_part(s, "make_tensor_descriptor's shape", False) for s in shape)
    strides = tuple(_scalar_part(s, "make_tensor_descriptor's strides", False) for s in strides)
    return tensor_descriptor(base, shape, strides, block, padding)


@dataclass(frozen=True)
class tensor_descriptor_type:
    """The type of a host ``TensorDescriptor`` argument: what the kernel is specialized for."""

    element: T.dtype
    block_shape: tuple
    padding: str = "zero"

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def ir_arguments(self, name: str) -> list:
        """(IR parameter name, IR type) of the scalars the argument is passed as."""
        args = [(f"{name}.base", T.pointer_type(self.element))]
        args += [(f"{name}.shape{i}", T.int32) for i in range(self.rank)]
        args += [(f"{name}.stride{i}", T.int64) for i in range(self.rank - 1)]
        return args

    def build(self, values: list) -> tensor_descriptor:
        """The device-side descriptor over the IR parameters ``values`` (tensors)."""
        rank = self.rank
        base, shape, strides = values[0], values[1:1 + rank], values[1 + rank:]
        return tensor_descriptor(base, shape, tuple(strides) + (1,), self.block_shape, self.padding)

    def __str__(self) -> str:
        return f"tensordesc<{self.element}, {list(self.block_shape)}>"


__all__ = ["make_tensor_descriptor", "tensor_descriptor", "tensor_descriptor_type"]
