"""What shape ops mean: splat, broadcast, reshape, expand_dims, permute, subscripts, join, split, cat, flip."""
from __future__ import annotations

import numpy as np

from ..language.core import tensor, unwrap
from .ir import types as T


def _is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


class ShapeSemantics:
    """The shape ops of ``Semantic`` (see semantics.py): they move a block's lanes, never combine them."""

    # shapes ----------------------------------------------------------------------
    def splat(self, x: tensor, shape) -> tensor:
        return self._emit("splat", [x], T.block_type(x.type, tuple(shape)))

    def broadcast_to(self, x, shape) -> tensor:
        x = self.to_tensor(x)
        shape = tuple(unwrap(s) for s in shape)
        if not x.type.is_block():
            return self.splat(x, shape) if shape else x
        src = x.type.shape
        if src == shape:
            return x
        if len(src) < len(shape):
            x = self.reshape(x, (1,) * (len(shape) - len(src)) + src)
            src = x.type.shape
        if len(src) != len(shape):
            raise ValueError(f"cannot broadcast a block of shape {list(src)} to {list(shape)}")
        for i, (a, b) in enumerate(zip(src, shape)):
            if a != b and a != 1:
                raise ValueError(f"cannot broadcast a block of shape {list(src)} to {list(shape)} (dimension {i}: {a} vs {b})")
        return self._emit("broadcast", [x], T.block_type(x.dtype, shape))

    def broadcast_pair(self, a: tensor, b: tensor) -> tuple[tensor, tensor]:
        a_block, b_block = a.type.is_block(), b.type.is_block()
        if not a_block and not b_block:
            return a, b
        if not a_block:
            return self.splat(a, b.type.shape), b
        if not b_block:
            return a, self.splat(b, a.type.shape)
        sa, sb = a.type.shape, b.type.shape
        if sa == sb:
            return a, b
        if len(sa) < len(sb):
            a = self.reshape(a, (1,) * (len(sb) - len(sa)) + sa)
            sa = a.type.shape
        elif len(sb) < len(sa):
            b = self.reshape(b, (1,) * (len(sa) - len(sb)) + sb)
            sb = b.type.shape
        target = []
        for i, (x, y) in enumerate(zip(sa, sb)):
            if x == y or y == 1:
                target.append(x)
            elif x == 1:
                target.append(y)
            else:
                raise ValueError(f"incompatible shapes {list(sa)} and {list(sb)}: dimension {i} is {x} in one and {y} in the other")
        target = tuple(target)
        if sa != target:
            a = self._emit("broadcast", [a], T.block_type(a.dtype, target))
        if sb != target:
            b = self._emit("broadcast", [b], T.block_type(b.dtype, target))
        return a, b

    def reshape(self, x, shape, can_reorder=False) -> tensor:
        x = self.to_tensor(x)
        shape = tuple(unwrap(s) for s in (shape if isinstance(unwrap(shape), (tuple, list)) else (shape,)))
        numel = int(np.prod(shape)) if shape else 1
        old = T.shape_of(x.type)
        old_numel = int(np.prod(old)) if old else 1
        if numel != old_numel:
            raise ValueError(f"cannot reshape a block of {old_numel} elements (shape {list(old)}) to shape {list(shape)}")
        if not shape:
            return self._emit("reshape", [x], x.dtype, {"shape": ()})
        if not x.type.is_block():
            return self.splat(x, shape)
        if old == shape:
            return x
        return self._emit("reshape", [x], T.block_type(x.dtype, shape), {"shape": shape})

    def expand_dims(self, x, axis) -> tensor:
        x = self.to_tensor(x)
        axes = unwrap(axis)
        axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
        shape = list(T.shape_of(x.type))
        rank = len(shape) + len(axes)  # negative axes count from the end of the result, as in Triton
        positions = []
        for a in (unwrap(a) for a in axes):
            if not isinstance(a, int) or not -rank <= a < rank:
                raise ValueError(f"invalid axis {a}. Expected {-rank} <= axis < {rank} (expand_dims axes count in "
                                 f"the result, of rank {rank})")
            positions.append(a % rank)
        if len(set(positions)) != len(positions):
            raise ValueError(f"expand_dims received duplicate axes, normalized axes = {positions}")
        for position in sorted(positions):
            shape.insert(position, 1)
        if not x.type.is_block():
            return self.splat(x, shape)
        return self._emit("reshape", [x], T.block_type(x.dtype, shape), {"shape": tuple(shape)})

    def permute(self, x, dims) -> tensor:
        x = self.to_tensor(x)
        dims = tuple(unwrap(d) for d in dims)
        shape = T.shape_of(x.type)
        if sorted(dims) != list(range(len(shape))):
            raise ValueError(f"permute order {list(dims)} is not a permutation of the {len(shape)} dimensions")
        if dims == tuple(range(len(shape))):
            return x
        new_shape = tuple(shape[d] for d in dims)
        return self._emit("permute", [x], T.block_type(x.dtype, new_shape), {"order": dims})

    def subscript(self, x: tensor, slices) -> tensor:
        slices = unwrap(slices)
        if not isinstance(slices, tuple):
            slices = (slices,)
        shape = list(T.shape_of(x.type))
        # As in Triton: the i-th index, when None, inserts a dimension of 1 at position i; ':' keeps
        # the block as it is (also past its last dimension: `ptr[None, None, :]` on a scalar is [1, 1]).
        new_shape = list(shape)
        for position, s in enumerate(slices):
            s = unwrap(s)
            if s is None:
                if position > len(new_shape):
                    raise IndexError(f"cannot insert a dimension at position {position} of a block of shape "
                                     f"{new_shape}: index {position} is past its last dimension")
                new_shape.insert(position, 1)
            elif not (isinstance(s, slice) and s.start is None and s.stop is None and s.step is None):
                raise IndexError(f"unsupported tensor index: {s!r}; only None and ':' are supported "
                                 "(use tl.reshape, tl.expand_dims, or masks)")
        if new_shape == shape:
            return x
        if not x.type.is_block():
            return self.splat(x, new_shape)
        return self._emit("reshape", [x], T.block_type(x.dtype, tuple(new_shape)), {"shape": tuple(new_shape)})

    # join, split, cat, flip ------------------------------------------------------------------------
    def join(self, a, b) -> tensor:
        """Stacks ``a`` and ``b`` (broadcast to one shape) along a new minor dimension of size 2."""
        a, b = self.to_tensor(a), self.to_tensor(b)
        if a.dtype != b.dtype:
            raise TypeError(f"tl.join needs two values of the same dtype, got {a.dtype} and {b.dtype}; "
                            "cast one of them")
        a, b = self.broadcast_pair(a, b)
        shape = T.shape_of(a.type) + (2,)
        return self._emit("join", [a, b], T.block_type(a.dtype, shape))

    def split(self, a) -> tuple[tensor, tensor]:
        """The two halves of a block whose last dimension has size 2 (scalars when it is 1-D)."""
        a = self._block(a, "tl.split")
        shape = a.type.shape
        if shape[-1] != 2:
            raise ValueError(f"tl.split needs a block whose last dimension has size 2, got shape {list(shape)}")
        out = T.block_type(a.dtype, shape[:-1]) if len(shape) > 1 else a.dtype
        op = self._create("split", [a], [out, out])
        return tensor(op.results[0], out), tensor(op.results[1], out)

    def cat(self, a, b, can_reorder=False, dim=0) -> tensor:
        a, b = self._block(a, "tl.cat"), self._block(b, "tl.cat")
        if a.dtype != b.dtype:
            raise TypeError(f"tl.cat needs two blocks of the same dtype, got {a.dtype} and {b.dtype}; cast one of them")
        sa, sb = a.type.shape, b.type.shape
        dim = self._static_int(dim, "tl.cat's dim")
        if len(sa) != len(sb):
            raise ValueError(f"tl.cat needs blocks of the same rank, got shapes {list(sa)} and {list(sb)}")
        if not -len(sa) <= dim < len(sa):
            raise ValueError(f"tl.cat dim {dim} is out of range for blocks of rank {len(sa)}")
        dim %= len(sa)
        if sa[:dim] + sa[dim + 1:] != sb[:dim] + sb[dim + 1:]:
            raise ValueError(f"tl.cat needs shapes that agree except along dim {dim}, got {list(sa)} and {list(sb)}")
        shape = sa[:dim] + (sa[dim] + sb[dim],) + sa[dim + 1:]
        self._shape(shape)  # the result must have power-of-two dimensions
        return self._emit("cat", [a, b], T.block_type(a.dtype, shape), {"axis": dim})

    def flip(self, x, dim=None) -> tensor:
        x = self._block(x, "tl.flip")
        rank = len(x.type.shape)
        dim = rank - 1 if unwrap(dim) is None else self._static_int(dim, "tl.flip's dim")
        if not -rank <= dim < rank:
            raise ValueError(f"tl.flip dim {dim} is out of range for a block of rank {rank}")
        return self._emit("flip", [x], x.type, {"axis": dim % rank})
