"""What each language operation means: type checks, promotion, broadcasting, and the IR it emits.

The frontend and the ``tl`` builtins call these methods; nothing else creates IR operations.
Errors raised here are plain ``TypeError``/``ValueError``: the frontend attaches the source
location of the expression being compiled.

``Semantic`` is put together from one class per op family: ``ElementwiseSemantics``
(semantics_elementwise.py), ``ShapeSemantics`` (semantics_shapes.py), ``MemorySemantics``
(semantics_memory.py) and ``CrossLaneSemantics`` (semantics_cross_lane.py: reductions, scans,
dot, sort, gather, histogram); constants, program ids, debugging ops, hints and random numbers
are here.
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

from ..language.core import constexpr, tensor, unwrap
from .ir import types as T
from .ir.builder import Builder
from .promotion import python_scalar_type
from .semantics_cross_lane import CrossLaneSemantics, default_fp32_dot_precision
from .semantics_elementwise import FP32_FP64_ONLY, ElementwiseSemantics
from .semantics_memory import MemorySemantics
from .semantics_shapes import ShapeSemantics, _is_pow2

__all__ = ["FP32_FP64_ONLY", "Semantic", "current", "default_fp32_dot_precision"]

_state = threading.local()


def current() -> Semantic:
    sem = getattr(_state, "semantic", None)
    if sem is None:
        raise RuntimeError(
            "tl functions and tensor operators can only be used inside a @triton.jit function "
            "that is being compiled (launch it with kernel[grid](...))"
        )
    return sem


class Semantic(ElementwiseSemantics, ShapeSemantics, MemorySemantics, CrossLaneSemantics):
    def __init__(self, builder: Builder, call_jit=None):
        self.builder = builder
        # Inlines a @jit function with tensor arguments (set by the frontend).
        self.call_jit = call_jit
        # Text printed by tl.static_print, emitted once compilation of the kernel ends.
        self.static_output: list[str] = []
        # The launch's num_warps (tl.extra.cuda.num_warps(), num_threads()), and whether the kernel read it
        # (its code then depends on num_warps, even on a backend without warps).
        self.num_warps = 4
        self.num_warps_read = False

    def __enter__(self):
        self._previous = getattr(_state, "semantic", None)
        _state.semantic = self
        return self

    def __exit__(self, *exc):
        _state.semantic = self._previous

    def _create(self, opcode, operands=(), result_types=(), attrs=None, regions=()):
        return self.builder.create(opcode, [o.handle if isinstance(o, tensor) else o for o in operands],
                                   result_types, attrs, regions)

    def _emit(self, opcode, operands, result_type, attrs=None) -> tensor:
        op = self._create(opcode, operands, [result_type], attrs)
        return tensor(op.result, result_type)

    # constants ---------------------------------------------------------------
    def constant(self, value, dtype: T.dtype) -> tensor:
        value = unwrap(value)
        if dtype.is_floating():
            value = float(value)
        elif dtype.is_bool():
            value = bool(value)
        else:
            value = int(value)
        return self._emit("constant", [], dtype, {"value": value})

    def to_tensor(self, x, dtype: Optional[T.dtype] = None) -> tensor:
        """A tensor for ``x``: tensors pass through; Python numbers become typed constants."""
        if isinstance(x, tensor):
            return x
        x = unwrap(x)
        if isinstance(x, tensor):
            return x
        if isinstance(x, (bool, int, float)):
            natural = python_scalar_type(x)
            result = self.constant(x, natural)
            return self.cast(result, dtype) if dtype is not None and dtype != natural else result
        if x is None:
            raise TypeError("None cannot be used as a value here")
        raise TypeError(f"cannot use a {type(x).__name__} ({x!r}) as a tensor value in a kernel")

    def full(self, shape, value, dtype) -> tensor:
        shape = self._shape(shape)
        dtype = unwrap(dtype)
        if isinstance(value, tensor):
            if value.type.is_block():
                raise ValueError("tl.full's value must be a scalar")
            scalar = self.cast(value, dtype)
        else:
            scalar = self.constant(value, dtype)
        return self.splat(scalar, shape) if shape else scalar

    def _shape(self, shape) -> tuple[int, ...]:
        shape = unwrap(shape)
        if isinstance(shape, (int, constexpr)):
            shape = (shape,)
        dims = []
        for d in shape:
            d = unwrap(d)
            if isinstance(d, tensor):
                raise TypeError("shape dimensions must be constexpr integers, not run-time values")
            if not isinstance(d, int):
                raise TypeError(f"shape dimensions must be integers, got {d!r}")
            if not _is_pow2(d):
                raise ValueError(f"shape {tuple(unwrap(s) for s in shape)} has a dimension {d} that is not a power of two; "
                                 "Triton blocks need power-of-two dimensions (use triton.next_power_of_2 and a mask)")
            dims.append(d)
        return tuple(dims)

    # program structure ---------------------------------------------------------
    def program_id(self, axis) -> tensor:
        axis = unwrap(axis)
        if axis not in (0, 1, 2):
            raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}")
        return self._emit("program_id", [], T.int32, {"axis": axis})

    def num_programs(self, axis) -> tensor:
        axis = unwrap(axis)
        if axis not in (0, 1, 2):
            raise ValueError(f"num_programs axis must be 0, 1 or 2, got {axis}")
        return self._emit("num_programs", [], T.int32, {"axis": axis})

    def arange(self, start, end) -> tensor:
        for name, value in (("start", start), ("end", end)):
            if isinstance(unwrap(value), tensor):
                raise ValueError(  # noqa: TRY004 - Triton's exception and wording
                    f"arange's arguments must be of type tl.constexpr ({name} is a run-time value); "
                    "annotate the kernel parameter as `NAME: tl.constexpr`"
                )
        start, end = unwrap(start), unwrap(end)
        if not isinstance(start, int) or not isinstance(end, int):
            raise ValueError("arange's arguments must be of type tl.constexpr integers")  # noqa: TRY004 - as Triton
        n = end - start
        if n <= 0:
            raise ValueError(f"arange's end ({end}) must be greater than its start ({start})")
        if not _is_pow2(n):
            raise ValueError(f"arange's range must be a power of two, got {n} (= {end} - {start})")
        if start < -(2**31) or end > 2**31:
            raise ValueError("arange's bounds must fit in int32")
        return self._emit("arange", [], T.block_type(T.int32, (n,)), {"start": start, "end": end})

    # debugging --------------------------------------------------------------------------
    def device_print(self, prefix: str, args, hex=False) -> None:
        values = [self.to_tensor(a) for a in args]
        self._create("print", values, [], {"prefix": prefix, "hex": bool(hex)})

    def device_assert(self, cond, msg: str, debug_only: bool = False) -> None:
        cond = self.to_bool(self.to_tensor(cond))
        self._create("assert", [cond], [], {"message": msg, **({"debug_only": True} if debug_only else {})})

    def assume(self, cond) -> None:
        cond = self.to_bool(self.to_tensor(cond))
        self._create("assume", [cond], [], {})

    def hint(self, x, kind: str, values) -> tensor:
        x = self.to_tensor(x)
        values = [unwrap(v) for v in (values if isinstance(unwrap(values), (list, tuple)) else [values])]
        if not all(isinstance(v, int) and v > 0 for v in values):
            raise ValueError(f"tl.{kind} takes positive constexpr integers, got {values}")
        rank = max(1, len(T.shape_of(x.type)))
        if len(values) not in (1, rank):
            raise ValueError(f"tl.{kind} takes one value or one per dimension ({rank}), got {len(values)}")
        if not (x.dtype.is_int() or x.dtype.is_ptr()):
            raise TypeError(f"tl.{kind} applies to integers and pointers, got {x.dtype}")
        op = self._create("hint", [x], [x.type], {"kind": kind, "values": tuple(values)})
        return tensor(op.result, x.type)

    # shared by the ops below ------------------------------------------------------------------
    def _broadcast_all(self, values: Sequence[tensor]) -> list[tensor]:
        """Every value broadcast (scalars splatted) to the shape they have in common."""
        common = values[0]
        for v in values[1:]:
            common, _ = self.broadcast_pair(common, v)
        shape = T.shape_of(common.type)
        return [self.broadcast_to(v, shape) for v in values]

    def _block(self, x, what: str) -> tensor:
        x = self.to_tensor(x)
        if not x.type.is_block():
            raise TypeError(f"{what} needs a block, got a scalar of type {x.type}")
        return x

    def _static_int(self, value, what: str) -> int:
        value = unwrap(value)
        if isinstance(value, tensor) or not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{what} must be a constexpr integer, got {value!r}")
        return value

    # random numbers ------------------------------------------------------------------------------
    def philox(self, c0, c1, c2, c3, k0, k1, n_rounds) -> list[tensor]:
        """``n_rounds`` rounds of Philox-4x32 (or 4x64) on counters c0..c3 with key (k0, k1)."""
        n_rounds = self._static_int(n_rounds, "n_rounds")
        if n_rounds < 0:
            raise ValueError(f"n_rounds must not be negative, got {n_rounds}")
        values = [self.to_tensor(v) for v in (c0, c1, c2, c3, k0, k1)]
        dtype = values[0].dtype
        if dtype not in (T.uint32, T.uint64):
            raise TypeError(f"philox counters must be uint32 or uint64, got {dtype}")
        for name, v in zip(("c1", "c2", "c3", "k0", "k1"), values[1:]):
            if v.dtype != dtype:
                raise TypeError(f"philox's {name} is {v.dtype} but c0 is {dtype}; "
                                "all counters and keys must have one type")
        values = self._broadcast_all(values)
        op = self._create("philox", values, [values[0].type] * 4, {"n_rounds": n_rounds})
        return [tensor(r, r.type) for r in op.results]
