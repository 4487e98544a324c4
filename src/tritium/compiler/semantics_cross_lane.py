"""What ops that read across a block's lanes mean: reductions, scans, dot, sort, top-k, gather, histogram."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import config
from ..language.core import tensor, unwrap
from .ir import types as T
from .ir.dot_sizes import TRITON_MIN_DOT_K, dot_k_problem
from .ir.ops import Region
from .semantics_shapes import _is_pow2


def default_fp32_dot_precision() -> str:
    """The input_precision of an fp32 ``tl.dot`` that names none: ``knobs.language.fp32_default``
    (``TRITON_F32_DEFAULT``) when set, else "tf32", as on NVIDIA GPUs."""
    from .. import knobs

    value = knobs.language.fp32_default
    if value is None or value == "":
        return "tf32"
    if value not in ("tf32", "tf32x3", "ieee"):
        raise ValueError(f"TRITON_F32_DEFAULT (knobs.language.fp32_default) must be 'tf32', 'tf32x3' or 'ieee', "
                         f"got {value!r}")
    return value


def check_dot_k(dtype: T.dtype, m: int, n: int, k: int, minimums) -> None:
    problem = dot_k_problem(dtype, m, n, k, minimums)
    if problem is not None:
        raise ValueError(f"{problem}; pad the K dimension (and mask the loads) up to the minimum")


class CrossLaneSemantics:
    """The cross-lane ops of ``Semantic`` (see semantics.py): each result lane depends on other lanes."""

    # reductions and scans -------------------------------------------------------------
    def _axis(self, x: tensor, axis) -> Optional[int]:
        axis = unwrap(axis)
        if axis is None:
            return None
        rank = len(T.shape_of(x.type))
        if not isinstance(axis, int) or not -rank <= axis < max(rank, 1):
            raise ValueError(f"reduction axis {axis!r} is out of range for a block of rank {rank}")
        return axis % max(rank, 1)

    def _flatten(self, x: tensor) -> tensor:
        shape = T.shape_of(x.type)
        return self.reshape(x, (int(np.prod(shape)),)) if len(shape) > 1 else x

    def reduce(self, inputs: Sequence[tensor], axis, kind: str, combine=None, keep_dims=False,
               result_dtypes=None) -> list[tensor]:
        """Reduce along ``axis`` (all axes when None). ``kind`` is a builtin or 'custom' with ``combine``."""
        inputs = [self.to_tensor(x) for x in inputs]
        if kind != "custom":  # a custom combine's arithmetic is checked where it is written
            self._no_fp8e4b15_arithmetic(*(x.dtype for x in inputs))
        if not inputs[0].type.is_block():
            return inputs if kind != "argmax" and kind != "argmin" else [self.constant(0, T.int32)]
        axis = self._axis(inputs[0], axis)
        original_rank = len(T.shape_of(inputs[0].type))  # keep_dims keeps every axis, also for axis=None
        if axis is None:
            inputs = [self._flatten(x) for x in inputs]
            full_shape = T.shape_of(inputs[0].type)
            axis = 0
        else:
            full_shape = T.shape_of(inputs[0].type)
        out_shape = tuple(s for i, s in enumerate(full_shape) if i != axis)
        result_dtypes = result_dtypes or [x.dtype for x in inputs]
        result_types = [T.block_type(d, out_shape) if out_shape else d for d in result_dtypes]
        attrs = {"axis": axis, "kind": kind}
        regions = []
        if kind == "custom":
            regions.append(combine)
        op = self._create("reduce", inputs, result_types, attrs, regions)
        results = [tensor(r, r.type) for r in op.results]
        if keep_dims:
            results = [self.expand_dims(r, axis) if out_shape else self.reshape(r, (1,) * original_rank)
                       for r in results]
        return results

    def scan(self, x: tensor, axis, kind: str, reverse=False, combine=None) -> list[tensor]:
        inputs = [self.to_tensor(v) for v in (x if isinstance(x, (list, tuple)) else [x])]
        if kind != "custom":
            self._no_fp8e4b15_arithmetic(*(v.dtype for v in inputs))
        axis = self._axis(inputs[0], axis)
        if axis is None:
            raise ValueError("scans need an axis")
        attrs = {"axis": axis, "kind": kind, "reverse": bool(unwrap(reverse))}
        op = self._create("scan", inputs, [v.type for v in inputs], attrs, [combine] if combine else [])
        return [tensor(r, r.type) for r in op.results]

    def combine_region(self, fn, dtypes: Sequence[T.dtype]) -> Region:
        """A region of 2n scalar arguments that applies the @jit function ``fn``; yields n values."""
        n = len(dtypes)
        region = Region(list(dtypes) * 2)
        with self.builder.insert_into(region):
            args = [tensor(a, a.type) for a in region.args]
            result = self.call_jit(fn, args)
            results = list(result) if isinstance(result, (tuple, list)) else [result]
            if len(results) != n:
                raise TypeError(f"the combine function {getattr(fn, '__name__', fn)} must return {n} value(s), "
                                f"it returned {len(results)}")
            results = [self.cast(self.to_tensor(r), d) for r, d in zip(results, dtypes)]
            for r in results:
                if r.type.is_block():
                    raise TypeError("a combine function must return scalars")
            self._create("yield", results, [])
        return region

    # dot ----------------------------------------------------------------------------------
    def dot(self, a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
            out_dtype=T.float32) -> tensor:
        a, b = self.to_tensor(a), self.to_tensor(b)
        out_dtype = unwrap(out_dtype)
        sa, sb = T.shape_of(a.type), T.shape_of(b.type)
        if len(sa) not in (2, 3) or len(sa) != len(sb):
            raise ValueError(f"tl.dot needs two 2-D (or two 3-D batched) blocks, got shapes {list(sa)} and {list(sb)}")
        if sa[-1] != sb[-2]:
            raise ValueError(f"tl.dot inner dimensions differ: {list(sa)} @ {list(sb)}")
        if len(sa) == 3 and sa[0] != sb[0]:
            raise ValueError(f"tl.dot batch dimensions differ: {list(sa)} @ {list(sb)}")
        m, k, n = sa[-2], sa[-1], sb[-1]
        if config.strict():  # compiled Triton's rule; the host backends take any K, as Triton's interpreter does
            check_dot_k(a.dtype, m, n, k, TRITON_MIN_DOT_K)
        if a.dtype.is_fp8e4b15() or b.dtype.is_fp8e4b15():
            # Triton multiplies fp8e4b15 as fp16 (exactly: every value is an fp16 value)
            a, b = (self.cast(v, T.float16) if v.dtype.is_fp8() else v for v in (a, b))
        if a.dtype != b.dtype and not (a.dtype.is_fp8() and b.dtype.is_fp8()):
            # Triton multiplies different fp8 formats (fp8e5 x fp8e4nv) directly, as the hardware does
            raise TypeError(f"tl.dot operands must have the same dtype, got {a.dtype} and {b.dtype}; cast one of them")
        if a.dtype.is_int():
            if a.dtype.primitive_bitwidth != 8:
                raise TypeError(f"integer tl.dot takes int8 operands, got {a.dtype}")
            result = T.int32
        else:
            result = out_dtype
        precision = unwrap(input_precision)
        if precision is None:
            allow = unwrap(allow_tf32)
            precision = "ieee" if allow is False else default_fp32_dot_precision()
        if precision not in ("tf32", "tf32x3", "ieee"):
            raise ValueError(f"input_precision must be 'tf32', 'tf32x3' or 'ieee', got {precision!r}")
        if not a.dtype.is_fp32():
            precision = "ieee"
        shape = tuple(sa[:-1]) + (n,)
        result_type = T.block_type(result, shape)
        if acc is None or unwrap(acc) is None:
            acc = self.full(shape, 0, result)
        else:
            acc = self.to_tensor(acc)
            if T.shape_of(acc.type) != shape:
                raise ValueError(f"tl.dot accumulator shape {list(T.shape_of(acc.type))} differs from the result shape {list(shape)}")
            result_type = acc.type
        return self._emit("dot", [a, b, acc], result_type, {"input_precision": precision})

    # sort, top-k, gather, histogram -------------------------------------------------------------
    def sort(self, x, dim=None, descending=False) -> tensor:
        x = self._block(x, "tl.sort")
        rank = len(x.type.shape)
        dim = rank - 1 if unwrap(dim) is None else self._static_int(dim, "tl.sort's dim")
        if dim % rank != rank - 1 or not -rank <= dim < rank:
            raise ValueError(f"tl.sort sorts along the last dimension only (as Triton does), got dim={dim} for a "
                             f"block of rank {rank}; permute the block first")
        descending = unwrap(descending)
        if isinstance(descending, tensor):
            raise TypeError("tl.sort's descending must be a constexpr")
        if x.dtype.is_fp8() or x.dtype.is_ptr():
            raise TypeError(f"tl.sort does not support {x.dtype}")
        return self._emit("sort", [x], x.type, {"descending": bool(descending)})

    def topk(self, x, k, dim=None, descending=True) -> tensor:
        x = self._block(x, "tl.topk")
        shape = x.type.shape
        rank = len(shape)
        dim = rank - 1 if unwrap(dim) is None else self._static_int(dim, "tl.topk's dim")
        if dim % rank != rank - 1 or not -rank <= dim < rank:
            raise ValueError(f"tl.topk selects along the last dimension only (as Triton does), got dim={dim} for a "
                             f"block of rank {rank}; permute the block first")
        k = self._static_int(k, "tl.topk's k")
        if not _is_pow2(k) or k > shape[-1]:
            raise ValueError(f"tl.topk's k must be a power of two no larger than the last dimension ({shape[-1]}), "
                             f"got {k}")
        ordered = self.sort(x, None, descending)
        if k == shape[-1]:
            return ordered
        # The first k elements of each sorted row.
        first = self.arange(0, k)
        if rank > 1:
            first = self.reshape(first, (1,) * (rank - 1) + (k,))
            first = self.broadcast_to(first, tuple(shape[:-1]) + (k,))
        return self.gather(ordered, first, rank - 1)

    def gather(self, src, index, axis) -> tensor:
        src, index = self._block(src, "tl.gather"), self._block(index, "tl.gather")
        if not index.dtype.is_int() or index.dtype.is_bool():
            raise TypeError(f"tl.gather's index must be an integer block, got {index.dtype}")
        ss, si = src.type.shape, index.type.shape
        if len(ss) != len(si):
            raise ValueError(f"tl.gather needs src and index of the same rank, got shapes {list(ss)} and {list(si)}")
        axis = self._static_int(axis, "tl.gather's axis")
        if not -len(ss) <= axis < len(ss):
            raise ValueError(f"tl.gather axis {axis} is out of range for blocks of rank {len(ss)}")
        axis %= len(ss)
        for d, (a, b) in enumerate(zip(ss, si)):
            if d != axis and a != b:
                raise ValueError(f"tl.gather: index shape {list(si)} must equal the src shape {list(ss)} in every "
                                 f"dimension except the gather axis {axis} (dimension {d}: {b} vs {a})")
        return self._emit("gather", [src, index], T.block_type(src.dtype, si), {"axis": axis})

    def histogram(self, x, num_bins, mask=None) -> tensor:
        x = self._block(x, "tl.histogram")
        if len(x.type.shape) != 1:
            raise ValueError(f"tl.histogram needs a 1-D block, got shape {list(x.type.shape)}")
        if not x.dtype.is_int() or x.dtype.is_bool():
            raise TypeError(f"tl.histogram needs integer input, got {x.dtype}")
        num_bins = self._static_int(num_bins, "tl.histogram's num_bins")
        self._shape((num_bins,))
        operands = [x]
        if mask is not None and unwrap(mask) is not None:
            mask = self.to_tensor(mask)
            if not mask.dtype.is_bool():
                raise TypeError(f"tl.histogram's mask must be a boolean block, got {mask.dtype}")
            operands.append(self.broadcast_to(mask, x.type.shape))
        return self._emit("histogram", operands, T.block_type(T.int32, (num_bins,)), {"num_bins": num_bins})
