"""Integer and pointer blocks kept symbolic while they are affine in the block's indices.

``offsets = pid * BLOCK + tl.arange(0, BLOCK)`` and ``ptr + offsets`` are, per program, a base
plus a fixed stride along each block axis. Kept in that form, they cost nothing to compute, a
load or store through them checks its bounds from the extremes alone and reads memory through
a strided view instead of a gather. Anything else materialises them into ordinary arrays.

Arithmetic is done on int64 bases and Python-int strides; since +, - and * commute with
wrapping modulo 2**32, materialising with ``astype(int32)`` gives exactly the wrapped int32 result.
Conversions that are not ring operations (int32 -> int64, pointer offsets) first check the range.
"""
from __future__ import annotations

import numpy as np

from ...compiler.ir import types as T


class Affine:
    """``base[program] + sum_k strides[k] * index_k`` over a block of ``shape``."""

    __slots__ = ("base", "strides", "shape", "dtype")

    def __init__(self, base: np.ndarray, strides, shape, dtype):
        self.base = base  # int64, shape (B,) or (1,)
        self.strides = tuple(int(s) for s in strides)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    def materialize(self) -> np.ndarray:
        rank = len(self.shape)
        out = self.base.reshape((-1,) + (1,) * rank)
        for axis, (n, stride) in enumerate(zip(self.shape, self.strides)):
            if stride and n > 1:
                steps = np.arange(n, dtype=np.int64) * stride
                out = out + steps.reshape((1,) + (1,) * axis + (n,) + (1,) * (rank - axis - 1))
        return out.astype(self.dtype)

    def extremes(self) -> tuple[int, int]:
        """The smallest and largest value over every program and lane."""
        low = int(self.base.min())
        high = int(self.base.max())
        for n, stride in zip(self.shape, self.strides):
            span = stride * (n - 1)
            low += min(0, span)
            high += max(0, span)
        return low, high

    def fits(self, dtype) -> bool:
        info = np.iinfo(dtype)
        low, high = self.extremes()
        return info.min <= low and high <= info.max

    @property
    def is_uniform_scalar(self) -> bool:
        """The same value in every program and lane."""
        return self.base.shape[0] == 1 and not any(self.strides)


def _int_like(ty) -> bool:
    scalar = ty.scalar
    return scalar.is_ptr() or (scalar.is_int() and not scalar.is_bool())


def make_arange(start: int, n: int) -> Affine:
    return Affine(np.array([start], dtype=np.int64), (1,), (n,), np.int32)


def make_splat(x: np.ndarray, ty) -> Affine | None:
    if not _int_like(ty) or x.ndim != 1:
        return None
    return Affine(x.astype(np.int64), (0,) * len(ty.shape), ty.shape, np.int64 if ty.scalar.is_ptr() else x.dtype)


# handlers over Affine operands: return an Affine/array, or NotImplemented to materialise -------
def _as_affine(x, ty) -> Affine | None:
    if isinstance(x, Affine):
        return x
    if isinstance(x, np.ndarray) and x.ndim == 1 + len(T.shape_of(ty)) and _int_like(ty) and \
            all(d == 1 for d in x.shape[1:]):
        return Affine(x.reshape(-1).astype(np.int64), (0,) * len(T.shape_of(ty)), T.shape_of(ty), x.dtype)
    return None


def affine_add(ex, op, args, active):
    a, b = (_as_affine(x, v.type) for x, v in zip(args, op.operands))
    if a is None or b is None:
        return NotImplemented
    sign = 1 if op.opcode == "add" else -1
    strides = tuple(x + sign * y for x, y in zip(a.strides, b.strides))
    return Affine(a.base + sign * b.base, strides, op.result.type.shape, a.dtype)


def affine_mul(ex, op, args, active):
    a, b = (_as_affine(x, v.type) for x, v in zip(args, op.operands))
    if a is None or b is None:
        return NotImplemented
    if b.is_uniform_scalar:
        factor = int(b.base[0])
        return Affine(a.base * factor, tuple(s * factor for s in a.strides), a.shape, a.dtype)
    if a.is_uniform_scalar:
        factor = int(a.base[0])
        return Affine(b.base * factor, tuple(s * factor for s in b.strides), b.shape, b.dtype)
    if not any(a.strides) and not any(b.strides):
        return Affine(a.base * b.base, a.strides, a.shape, a.dtype)
    return NotImplemented


def affine_addptr(ex, op, args, active):
    ptr, offset = args
    offset_ty = op.operands[1].type
    off = _as_affine(offset, offset_ty)
    base = _as_affine(ptr, op.operands[0].type)
    if off is None or base is None:
        return NotImplemented
    if off.dtype != np.int64 and not off.fits(off.dtype):
        return NotImplemented  # the int32 offsets wrapped: let the array path reproduce that
    size = op.result.type.scalar.element_ty.itemsize
    strides = tuple(p + size * o for p, o in zip(base.strides, off.strides))
    return Affine(base.base + size * off.base, strides, op.result.type.shape, np.int64)


def affine_broadcast(ex, op, args, active):
    (x,) = args
    shape = op.result.type.shape
    strides = tuple(0 if n == 1 else s for n, s in zip(x.shape, x.strides))
    return Affine(x.base, strides, shape, x.dtype)


def affine_reshape(ex, op, args, active):
    (x,) = args
    new_shape = T.shape_of(op.result.type)
    old = [(n, s) for n, s in zip(x.shape, x.strides) if n != 1]
    if [n for n in new_shape if n != 1] != [n for n, _ in old]:
        return NotImplemented  # a real reshape: materialise
    strides, kept = [], iter(old)
    for n in new_shape:
        strides.append(0 if n == 1 else next(kept)[1])
    return Affine(x.base, strides, new_shape, x.dtype)


def affine_permute(ex, op, args, active):
    (x,) = args
    order = op.attrs["order"]
    return Affine(x.base, [x.strides[d] for d in order], [x.shape[d] for d in order], x.dtype)


def affine_cast(ex, op, args, active):
    (x,) = args
    target = op.attrs["to"]
    if not target.is_int() or target.is_bool():
        return NotImplemented
    numpy_target = target.numpy
    if not x.fits(x.dtype) or not x.fits(numpy_target):
        return NotImplemented  # the conversion changes some value: let the array path do it
    return Affine(x.base, x.strides, x.shape, numpy_target)


# The predicate on d = a - b whose truth for every lane follows from d's range [low, high]:
# (always true, always false).
_DECIDED_BY_RANGE = {
    "lt": (lambda low, high: high < 0, lambda low, high: low >= 0),
    "le": (lambda low, high: high <= 0, lambda low, high: low > 0),
    "gt": (lambda low, high: low > 0, lambda low, high: high <= 0),
    "ge": (lambda low, high: low >= 0, lambda low, high: high < 0),
    "eq": (lambda low, high: low == high == 0, lambda low, high: high < 0 or low > 0),
    "ne": (lambda low, high: high < 0 or low > 0, lambda low, high: low == high == 0),
}


def affine_cmp(ex, op, args, active):
    """A comparison whose result is the same in every lane of the batch (``offsets < n`` away from
    the tail) is one broadcast boolean, not a block: masks that are all true cost nothing."""
    a, b = (_as_affine(x, v.type) for x, v in zip(args, op.operands))
    if a is None or b is None or not a.fits(a.dtype) or not b.fits(b.dtype):
        return NotImplemented  # wrapped values compare as wrapped: let the array path do it
    shape = T.shape_of(op.result.type)
    strides = tuple(x - y for x, y in zip(a.strides, b.strides))
    low, high = Affine(a.base - b.base, strides, shape, np.int64).extremes()
    rank = len(shape)
    always, never = _DECIDED_BY_RANGE[op.attrs["predicate"]]
    if always(low, high):
        return np.ones((1,) * (rank + 1), dtype=bool)
    if never(low, high):
        return np.zeros((1,) * (rank + 1), dtype=bool)
    return NotImplemented


def affine_load(ex, op, args, active):
    ptr = args[0]
    if not isinstance(ptr, Affine):
        return NotImplemented
    mask = args[op.operand_index("mask")] if op.operand("mask") is not None else None
    if isinstance(mask, Affine):
        return NotImplemented
    # Inactive programs' lanes are read too: harmless, since the whole window is in bounds, and
    # their values are never used.
    other = args[op.operand_index("other")] if op.operand("other") is not None else None
    if isinstance(other, Affine):  # `other=0` on an integer load: a splat the interpreter keeps symbolic
        other = other.materialize()
    dtype = op.result.type.scalar.numpy
    window = ex.memory.strided_window(ptr, dtype.itemsize, ex.batch, ex.grid[0])
    if window is None:
        return NotImplemented  # some lane may be out of bounds: the lane-by-lane check decides
    if mask is not None and mask.shape[0] not in (1, ex.batch):
        return NotImplemented
    return ex.memory.load_window(window, mask, other, dtype, ex.batch, ptr.shape)


def affine_store(ex, op, args, active):
    ptr, value = args[0], args[1]
    if not isinstance(ptr, Affine) or isinstance(value, Affine):
        return NotImplemented
    if op.operand("mask") is not None:
        mask = args[op.operand_index("mask")]
        if isinstance(mask, Affine) or not np.all(mask):
            return NotImplemented
    if active is not None and not np.all(active):
        return NotImplemented
    dtype = op.operands[0].type.scalar.element_ty.numpy
    window = ex.memory.strided_window(ptr, dtype.itemsize, ex.batch, ex.grid[0])
    if window is None or not ex.memory.store_window(window, value.astype(dtype, copy=False), dtype, ex.batch,
                                                     ptr.shape):
        return NotImplemented
    return []


AFFINE_HANDLERS = {
    "load": affine_load,
    "store": affine_store,
    "add": affine_add,
    "sub": affine_add,
    "mul": affine_mul,
    "addptr": affine_addptr,
    "broadcast": affine_broadcast,
    "reshape": affine_reshape,
    "permute": affine_permute,
    "cast": affine_cast,
    "cmp": affine_cmp,
}
