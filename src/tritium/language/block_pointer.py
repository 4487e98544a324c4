"""Block pointers: ``tl.make_block_ptr``, ``tl.advance``, and ``tl.load``/``tl.store`` through them.

A block pointer describes a tile of a strided N-d tensor: a base pointer, the tensor's shape and
strides, the tile's offsets (its first element's coordinates) and the tile's ``block_shape``.
The pointer itself is a compile-time aggregate (``compiler.aggregates.Aggregate``) whose parts
are scalars; a load or store through it is a ``tile_load``/``tile_store`` in the IR, holding the
tensor's shape and strides and the tile's offsets (what a GPU's TMA unit needs), which
``compiler/passes/lower_tile_access.py`` turns into pointer arithmetic and a mask for backends
without one.

Only the dimensions named in ``boundary_check`` are masked, as in Triton: an access outside
the tensor along an unchecked dimension is a real out-of-bounds access (the interpreter
reports it as OutOfBoundsError). Through run-time loops and ``if``s the parts are carried as
separate scalars (``tl.advance`` changes only the offsets, so only they end up carried).
"""
from __future__ import annotations

from ..compiler.aggregates import Aggregate
from ..compiler.ir import types as T
from .core import _semantic, builtin, tensor, unwrap

_INT32 = (-(2**31), 2**31)


def _sequence(value, what: str) -> tuple:
    value = unwrap(value)
    if isinstance(value, tensor) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{what} must be a tuple or list, got {value!r}")
    return tuple(value)


def _static_int(value):
    """The Python int behind ``value`` when it is a compile-time integer; None otherwise."""
    value = unwrap(value)
    if isinstance(value, (bool, tensor)):
        return None
    return value if isinstance(value, int) else None


def _scalar_part(value, what: str, int32_only: bool):
    """A part of a block pointer: a Python int, or an integer scalar tensor."""
    value = unwrap(value)
    if isinstance(value, tensor):
        if value.type.is_block():
            raise TypeError(f"{what} must be scalars, got a block of shape {list(value.type.shape)}")
        if not value.dtype.is_int() or value.dtype.is_bool():
            raise TypeError(f"{what} must be integers, got a value of type {value.dtype}")
        if int32_only and value.dtype != T.int32:
            raise TypeError(f"{what} must be int32 scalars, got {value.dtype}: block pointers only support 32-bit "
                            "offsets; add a `.to(tl.int32)` or use regular pointer indexing for 64-bit offsets")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be integers, got {value!r}")
    if int32_only and not _INT32[0] <= value < _INT32[1]:
        raise ValueError(f"{what} must fit in int32, got {value}")
    return value


def _block_shape(block_shape, what: str = "block_shape") -> tuple[int, ...]:
    dims = _sequence(block_shape, what)
    out = []
    for i, d in enumerate(dims):
        d = unwrap(d)
        if isinstance(d, (tensor, bool)) or not isinstance(d, int):
            raise TypeError(f"{what}[{i}] must be a constexpr integer, got {d!r}")
        out.append(d)
    _semantic()._shape(tuple(out))  # powers of two
    return tuple(out)


class BlockPointer(Aggregate):
    """What ``tl.make_block_ptr`` returns: a pointer to a ``block_shape`` tile of a strided tensor."""

    def __init__(self, base: tensor, shape, strides, offsets, block_shape, order):
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offsets = tuple(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)

    # Aggregate ------------------------------------------------------------------------------
    def flatten(self):
        rank = len(self.block_shape)

        def rebuild(parts):
            base, rest = parts[0], parts[1:]
            return BlockPointer(base, rest[:rank], rest[rank:2 * rank], rest[2 * rank:], self.block_shape,
                                self.order)

        return [self.base, *self.shape, *self.strides, *self.offsets], rebuild

    def structure(self) -> tuple:
        return ("block pointer", self.block_shape, self.order)

    # what kernels may look at -------------------------------------------------------------------
    @property
    def dtype(self):
        return self.base.dtype

    @property
    def type(self):
        return T.pointer_type(T.block_type(self.base.dtype.element_ty, self.block_shape))

    def __repr__(self) -> str:
        return f"block_pointer<{self.base.dtype.element_ty}, block_shape={list(self.block_shape)}>"

    def __add__(self, other):
        raise TypeError("a block pointer does not support arithmetic; move it with tl.advance(ptr, offsets)")

    __radd__ = __sub__ = __add__


def _boundary_check(boundary_check, rank: int) -> tuple[int, ...]:
    value = unwrap(boundary_check)
    if value is None:
        return ()
    dims = (value,) if isinstance(value, int) else _sequence(value, "boundary_check")
    out = set()
    for d in dims:
        d = unwrap(d)
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"boundary_check must list constexpr dimension numbers, got {d!r}")
        if not 0 <= d < rank:
            raise ValueError(f"boundary_check dimension {d} is out of range for a block pointer of rank {rank}")
        out.add(d)
    return tuple(sorted(out))


def _padding(padding_option) -> str:
    padding = unwrap(padding_option)
    padding = "" if padding is None else padding
    if padding not in ("", "zero", "nan"):
        raise ValueError(f"padding_option must be '', 'zero' or 'nan', got {padding!r}")
    return padding


def load_block(ptr: BlockPointer, boundary_check=(), padding_option="", cache_modifier="",
               eviction_policy="") -> tensor:
    """``tl.load`` through a block pointer: a ``tile_load`` in the IR."""
    checked = _boundary_check(boundary_check, len(ptr.block_shape))
    padding = _padding(padding_option)
    element = ptr.base.dtype.element_ty
    if padding == "nan" and not element.is_floating():
        raise ValueError(f"padding_option='nan' is not supported for integer block pointers ({element})")
    return _semantic().tile_load(ptr.base, ptr.shape, ptr.strides, ptr.offsets, ptr.block_shape, ptr.order, checked,
                                 padding, "block_pointer", cache_modifier, eviction_policy)


def _store_value(value, element: T.dtype, block_shape, what: str) -> tensor:
    sem = _semantic()
    raw = unwrap(value)
    if isinstance(raw, (bool, int, float)):
        value = sem.to_tensor(raw, element)
    else:
        value = sem.to_tensor(value)
        if value.dtype != element:
            raise TypeError(f"{what}: the value's element type {value.dtype} differs from the block's {element}; "
                            f"convert it first, e.g. value.to(tl.{element.name})")
    return sem.broadcast_to(value, block_shape)


def store_block(ptr: BlockPointer, value, boundary_check=(), cache_modifier="", eviction_policy="") -> None:
    """``tl.store`` through a block pointer: a ``tile_store`` in the IR."""
    checked = _boundary_check(boundary_check, len(ptr.block_shape))
    element = ptr.base.dtype.element_ty
    value = _store_value(value, element, ptr.block_shape, "tl.store through a block pointer")
    _semantic().tile_store(ptr.base, value, ptr.shape, ptr.strides, ptr.offsets, ptr.block_shape, ptr.order, checked,
                           "block_pointer", cache_modifier, eviction_policy)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A pointer to the ``block_shape`` tile at ``offsets`` of the tensor at ``base`` with ``shape`` and
    ``strides`` (in elements). ``order`` lists the dimensions from the fastest-varying one (a layout hint).
    Triton 3.9 removed block pointers; tritium keeps them, and ``TRITIUM_STRICT=1`` warns where one is
    made (code meant for Triton 3.9 takes ``tl.make_tensor_descriptor`` instead)."""
    from .. import config
    from .standard import _warn_at_kernel_line

    if config.strict():
        _warn_at_kernel_line("tl.make_block_ptr: Triton 3.9 removed block pointers, so this kernel does not compile "
                             "there; use tl.make_tensor_descriptor (tritium keeps block pointers)", DeprecationWarning)
    base = unwrap(base)
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.type.is_block():
        raise TypeError(f"make_block_ptr's base must be a scalar pointer (a tensor argument), got {base!r}")
    block = _block_shape(block_shape)
    rank = len(block)
    parts = {}
    for name, value in (("shape", shape), ("strides", strides), ("offsets", offsets)):
        items = _sequence(value, name)
        if len(items) != rank:
            raise ValueError(f"make_block_ptr: block_shape has {rank} dimensions but {name} has {len(items)}; "
                             "shape, strides, offsets, block_shape and order must have the same length")
        parts[name] = tuple(_scalar_part(v, f"make_block_ptr's {name}", name == "offsets") for v in items)
    order_items = tuple(unwrap(o) for o in _sequence(order, "order"))
    if sorted(order_items) != list(range(rank)):
        raise ValueError(f"make_block_ptr's order must be a permutation of 0..{rank - 1}, got {list(order_items)}")
    return BlockPointer(base, parts["shape"], parts["strides"], parts["offsets"], block, order_items)


def advance_offsets(offsets, deltas, what: str = "tl.advance") -> tuple:
    sem = _semantic()
    deltas = _sequence(deltas, f"{what}'s offsets")
    if len(deltas) != len(offsets):
        raise ValueError(f"{what}: the block pointer has {len(offsets)} dimensions but {len(deltas)} offsets "
                         "were given")
    out = []
    for offset, delta in zip(offsets, deltas):
        delta = _scalar_part(delta, f"{what}'s offsets", True)
        a, b = _static_int(offset), _static_int(delta)
        if b == 0:
            out.append(offset)
        elif a is not None and b is not None:
            out.append(_scalar_part(a + b, f"{what}'s result", True))
        else:
            out.append(sem.add(offset, delta))
    return tuple(out)


@builtin
def advance(base, offsets):
    """The block pointer ``base`` moved by ``offsets`` (in elements, one per dimension)."""
    if not isinstance(base, BlockPointer):
        raise TypeError(f"tl.advance needs a block pointer (made by tl.make_block_ptr), got {base!r}")
    return BlockPointer(base.base, base.shape, base.strides, advance_offsets(base.offsets, offsets), base.block_shape,
                        base.order)


__all__ = ["BlockPointer", "advance", "load_block", "make_block_ptr", "store_block"]
