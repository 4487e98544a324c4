"""Rewrites ``tile_load``/``tile_store`` (block pointers, tensor descriptors) into pointer arithmetic,
a mask and an ordinary ``load``/``store``, for backends that have no tile-copy unit.

A tile access keeps the tensor's shape, strides and the tile's offsets together in the IR, which
is what a GPU's TMA unit needs; the interpreter and the CPU backend want addresses instead::

    address = base + sum_d (offsets[d] + arange(block_shape[d])) * strides[d]   (i64, broadcast)
    mask    = AND over the checked dims d of  0 <= offsets[d] + arange(block_shape[d]) < shape[d]

Checks that hold at compile time (a constant offset of 0, a bound no index can reach) are left
out, so an unchecked tile costs no mask. The new ops carry the tile op's source location.
"""
from __future__ import annotations

from typing import Optional

from ...language.core import tensor
from ..ir import types as T
from ..ir.builder import Builder
from ..ir.ops import Function, Operation, Value
from ..semantics import Semantic
from .rewriting import expand_ops

_INT32_END = 2 ** 31
# The ops this pass rewrites, each with what it becomes: a backend that runs the pass never sees them.
REMOVES = {
    "tile_load": "the compiler's lower_tile_access pass turns it into pointer arithmetic, a mask and a load",
    "tile_store": "the compiler's lower_tile_access pass turns it into pointer arithmetic, a mask and a store",
}


def _static_int(value) -> Optional[int]:
    """The integer a constant op gives ``value`` (a Python int passes through); None otherwise."""
    if isinstance(value, int):
        return value
    if isinstance(value, tensor):
        value = value.handle
    owner = getattr(value, "owner", None)
    if owner is not None and owner.opcode == "constant" and not isinstance(owner.attrs["value"], (bool, float)):
        return owner.attrs["value"]
    return None


def _part(value: Value):
    """A layout operand as the address arithmetic wants it: a Python int when it is a constant, so
    the arithmetic stays weakly typed as the source wrote it, else a tensor."""
    static = _static_int(value)
    return static if static is not None else tensor(value, value.type)


def _inside(sem: Semantic, index: tensor, offset, size: int, extent) -> list:
    """The checks ``0 <= index`` and ``index < extent`` that are not known to hold at compile time."""
    low, high = _static_int(offset), _static_int(extent)
    checks = []
    if low is None or low < 0:
        checks.append(sem.compare("ge", index, 0))
    if not (high is not None and (high >= _INT32_END or (low is not None and low + size <= high))):
        checks.append(sem.compare("lt", index, extent))
    return checks


def tile_addresses(sem: Semantic, base: tensor, shape, strides, offsets, block_shape, checked=()):
    """The pointers of a tile and the mask of its checked dimensions (None when nothing needs masking)."""
    rank = len(block_shape)
    total = None
    mask = None
    for dim, size in enumerate(block_shape):
        index = sem.arange(0, size)
        offset = offsets[dim]
        if _static_int(offset) != 0:
            index = sem.add(index, offset)
        if rank > 1:
            view = [1] * rank
            view[dim] = size
            index = sem.reshape(index, tuple(view))
        term = sem.cast(index, T.int64)
        stride = strides[dim]
        if _static_int(stride) != 1:
            term = sem.mul(term, stride if _static_int(stride) is not None else sem.cast(stride, T.int64))
        total = term if total is None else sem.add(total, term)
        if dim in checked:
            for inside in _inside(sem, index, offset, size, shape[dim]):
                mask = inside if mask is None else sem.logical("and", mask, inside)
    total = sem.broadcast_to(total, block_shape)
    pointers = sem.addptr(base, total)
    if mask is not None:
        mask = sem.broadcast_to(mask, block_shape)
    return pointers, mask


def _checked_dims(op: Operation) -> tuple[int, ...]:
    rank = len(op.attrs["block_shape"])
    return tuple(range(rank)) if op.attrs["source"] == "descriptor" else tuple(op.attrs["boundary_check"])


def _lowered(sem: Semantic, op: Operation) -> list[Value]:
    """The address arithmetic, mask and load or store of a tile access; a load's new value."""
    block_shape = tuple(op.attrs["block_shape"])
    rank = len(block_shape)
    base = tensor(op.operand("base"), op.operand("base").type)
    layout = op.operands[2 if op.opcode == "tile_store" else 1:]
    shape, strides, offsets = ([_part(v) for v in layout[i * rank:(i + 1) * rank]] for i in range(3))
    pointers, mask = tile_addresses(sem, base, shape, strides, offsets, block_shape, _checked_dims(op))
    hints = {"cache_modifier": op.attrs["cache_modifier"], "eviction_policy": op.attrs["eviction_policy"]}
    if op.opcode == "tile_store":
        value = op.operand("value")
        sem.store(pointers, tensor(value, value.type), mask, **hints)
        return []
    other = None
    if mask is not None:
        other = float("nan") if op.attrs["padding"] == "nan" else 0
    return [sem.load(pointers, mask, other, **hints).handle]


def lower_tile_access(fn: Function) -> bool:
    """Rewrites every tile access of ``fn`` in place; returns whether anything changed."""
    builder = Builder()
    with Semantic(builder) as sem:
        return expand_ops(fn, tuple(REMOVES), lambda op: _lowered(sem, op), builder)
