"""What each language operation means: type checks, promotion, broadcasting, and the IR it emits.

The frontend and the ``tl`` builtins call these methods; nothing else creates IR operations.
Errors raised here are plain ``TypeError``/``ValueError``: the frontend attaches the source
location of the expression being compiled.
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np

from ..language.core import constexpr, tensor, unwrap
from .ir import types as T
from .ir.builder import Builder
from .ir.ops import Region
from .promotion import PromotionError, computation_type, python_scalar_type

_state = threading.local()


def current() -> "Semantic":
    sem = getattr(_state, "semantic", None)
    if sem is None:
        raise RuntimeError(
            "tl functions and tensor operators can only be used inside a @triton.jit function "
            "that is being compiled (launch it with kernel[grid](...))"
        )
    return sem


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


def _is_number(x) -> bool:
    x = unwrap(x)
    return isinstance(x, (bool, int, float)) and not isinstance(x, tensor)


def _is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


# Functions that Triton's math library restricts to fp32/fp64 (triton.language.math).
FP32_FP64_ONLY = frozenset({"exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "sqrt_rn", "rsqrt",
                            "erf", "floor", "ceil", "div_rn"})


class Semantic:
    def __init__(self, builder: Builder, call_jit=None):
        self.builder = builder
        # Inlines a @jit function with tensor arguments (set by the frontend).
        self.call_jit = call_jit
        # Text printed by tl.static_print, emitted once compilation of the kernel ends.
        self.static_output: list[str] = []

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
                raise ValueError(
                    f"arange's arguments must be of type tl.constexpr ({name} is a run-time value); "
                    "annotate the kernel parameter as `NAME: tl.constexpr`"
                )
        start, end = unwrap(start), unwrap(end)
        if not isinstance(start, int) or not isinstance(end, int):
            raise ValueError("arange's arguments must be of type tl.constexpr integers")
        n = end - start
        if n <= 0:
            raise ValueError(f"arange's end ({end}) must be greater than its start ({start})")
        if not _is_pow2(n):
            raise ValueError(f"arange's range must be a power of two, got {n} (= {end} - {start})")
        if start < -(2**31) or end > 2**31:
            raise ValueError("arange's bounds must fit in int32")
        return self._emit("arange", [], T.block_type(T.int32, (n,)), {"start": start, "end": end})

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
        new_shape = []
        source_dim = 0
        for s in slices:
            s = unwrap(s)
            if s is None:
                new_shape.append(1)
            elif isinstance(s, slice) and s.start is None and s.stop is None and s.step is None:
                if source_dim >= len(shape):
                    raise IndexError(f"too many indices for a block of shape {shape}")
                new_shape.append(shape[source_dim])
                source_dim += 1
            else:
                raise IndexError(f"unsupported tensor index: {s!r}; only None and ':' are supported "
                                 "(use tl.reshape, tl.expand_dims, or masks)")
        new_shape.extend(shape[source_dim:])
        if new_shape == shape:
            return x
        if not x.type.is_block():
            return self.splat(x, new_shape)
        return self._emit("reshape", [x], T.block_type(x.dtype, tuple(new_shape)), {"shape": tuple(new_shape)})

    # casts -----------------------------------------------------------------------
    def cast(self, x, dtype, rounding: Optional[str] = None, bitcast: bool = False) -> tensor:
        x = self.to_tensor(x)
        dtype = unwrap(dtype)
        if isinstance(dtype, T.pointer_type):
            return self._pointer_cast(x, dtype)
        if not isinstance(dtype, T.dtype):
            raise TypeError(f"cannot cast to {dtype!r}: not a dtype")
        src = x.dtype
        if bitcast:
            if src.is_ptr() or src.primitive_bitwidth != dtype.primitive_bitwidth:
                raise ValueError(f"cannot bitcast {src} to {dtype}: the bit widths differ "
                                 f"({src.primitive_bitwidth} vs {dtype.primitive_bitwidth})")
            if src == dtype:
                return x
            return self._emit("bitcast", [x], T.with_element(x.type, dtype))
        if src.is_ptr():
            if dtype.is_int():
                return self._emit("ptr_to_int", [x], T.with_element(x.type, dtype))
            raise TypeError(f"cannot cast a pointer to {dtype}")
        if src == dtype:
            return x
        if rounding is not None:
            if rounding not in ("rtne", "rtz"):
                raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
            if not (src.is_floating() and dtype.is_floating() and dtype.primitive_bitwidth < src.primitive_bitwidth):
                raise ValueError("fp_downcast_rounding applies only to casts from a float type to a narrower float type "
                                 f"(here {src} -> {dtype})")
        attrs = {"to": dtype}
        if rounding is not None:
            attrs["rounding"] = rounding
        return self._emit("cast", [x], T.with_element(x.type, dtype), attrs)

    def _pointer_cast(self, x: tensor, dtype: T.pointer_type) -> tensor:
        if x.dtype.is_ptr():
            return self._emit("bitcast", [x], T.with_element(x.type, dtype))
        if x.dtype.is_int() and x.dtype.primitive_bitwidth == 64:
            return self._emit("int_to_ptr", [x], T.with_element(x.type, dtype))
        raise TypeError(f"cannot cast {x.dtype} to {dtype}: only 64-bit integers and pointers convert to pointers")

    # arithmetic ---------------------------------------------------------------------
    def _promote(self, a, b, div_or_mod=False, allow_ptr=False) -> tuple[tensor, tensor]:
        a_weak, b_weak = _is_number(a), _is_number(b)
        a_ty = python_scalar_type(unwrap(a)) if a_weak else self.to_tensor(a).dtype
        b_ty = python_scalar_type(unwrap(b)) if b_weak else self.to_tensor(b).dtype
        if a_ty.is_ptr() or b_ty.is_ptr():
            raise TypeError(f"this operator is not defined for {a_ty} and {b_ty}")
        try:
            ty = computation_type(a_ty, a_weak, b_ty, b_weak, div_or_mod)
        except PromotionError as e:
            raise TypeError(str(e)) from None
        a = self._scalar_operand(a, ty) if a_weak else self.cast(self.to_tensor(a), ty)
        b = self._scalar_operand(b, ty) if b_weak else self.cast(self.to_tensor(b), ty)
        return self.broadcast_pair(a, b)

    def _scalar_operand(self, value, ty: T.dtype) -> tensor:
        """A Python number as a constant of ``ty``, rounded once, and checked to fit as Triton does."""
        value = unwrap(value)
        if ty.is_int() and not ty.is_bool() and not isinstance(value, float):
            v = int(value)
            if v < 0 and ty.is_int_unsigned():
                raise ValueError(f"cannot combine a {ty} value with the negative scalar {v}; "
                                 "cast one of them explicitly")
            bits = ty.int_bitwidth
            low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if ty.is_int_signed() else (0, 2**bits - 1)
            if not low <= v <= high:
                raise ValueError(f"scalar {v} is out of range for type {ty}")
        return self.constant(value, ty)

    def _binary(self, opcode, a, b, div_or_mod=False) -> tensor:
        a, b = self._promote(a, b, div_or_mod)
        return self._emit(opcode, [a, b], a.type)

    def add(self, a, b) -> tensor:
        a_ptr = isinstance(a, tensor) and a.dtype.is_ptr()
        b_ptr = isinstance(b, tensor) and b.dtype.is_ptr()
        if a_ptr and b_ptr:
            raise TypeError("cannot add two pointers")
        if a_ptr or b_ptr:
            ptr, offset = (a, b) if a_ptr else (b, a)
            return self.addptr(ptr, offset)
        return self._binary("add", a, b)

    def sub(self, a, b) -> tensor:
        if isinstance(a, tensor) and a.dtype.is_ptr():
            if isinstance(b, tensor) and b.dtype.is_ptr():
                raise TypeError("subtracting two pointers is not supported")
            return self.addptr(a, self.neg(self.to_tensor(b)))
        if isinstance(b, tensor) and b.dtype.is_ptr():
            raise TypeError("cannot subtract a pointer from a number")
        return self._binary("sub", a, b)

    def addptr(self, ptr: tensor, offset) -> tensor:
        offset = self.to_tensor(offset)
        if not offset.dtype.is_int():
            raise TypeError(f"pointer offsets must be integers, got {offset.dtype}")
        ptr, offset = self.broadcast_pair(ptr, offset)
        return self._emit("addptr", [ptr, offset], ptr.type)

    def mul(self, a, b) -> tensor:
        return self._binary("mul", a, b)

    def truediv(self, a, b) -> tensor:
        a, b = self._promote(a, b, div_or_mod=True)
        if a.dtype.is_int():
            a, b = self.cast(a, T.float32), self.cast(b, T.float32)
        return self._emit("div", [a, b], a.type)

    def floordiv(self, a, b) -> tensor:
        a, b = self._promote(a, b, div_or_mod=True)
        if not a.dtype.is_int():
            raise TypeError(f"// is defined for integers only, got {a.dtype}; use / for floats")
        return self._emit("floordiv", [a, b], a.type)

    def mod(self, a, b) -> tensor:
        a, b = self._promote(a, b, div_or_mod=True)
        return self._emit("mod", [a, b], a.type)

    def bitwise(self, kind: str, a, b) -> tensor:
        operand_types = [getattr(v, "dtype", type(v).__name__) for v in (a, b)]
        a, b = self._promote(a, b)
        if not a.dtype.is_int():
            raise TypeError(f"invalid operands of type {operand_types[0]} and {operand_types[1]}: bitwise {kind} "
                            f"is defined for integer and boolean values only, got {a.dtype}")
        return self._emit(kind, [a, b], a.type)

    def shift(self, kind: str, a, b) -> tensor:
        # As in Triton, >> is arithmetic when the left operand is signed and logical when it is unsigned,
        # whatever type the operands promote to (int8 >> uint8 shifts the uint8 bits arithmetically).
        left_signed = not isinstance(a, tensor) or (a.dtype.is_int_signed() and not a.dtype.is_bool())
        a, b = self._promote(a, b)
        if not a.dtype.is_int() or a.dtype.is_bool():
            raise TypeError(f"shifts are defined for integers only, got {a.dtype}")
        if kind == "shr" and a.dtype.is_int_signed() != left_signed:
            as_type = T.dtype(("int" if left_signed else "uint") + str(a.dtype.primitive_bitwidth))
            a_as, b_as = self.cast(a, as_type), self.cast(b, as_type)
            return self.cast(self._emit(kind, [a_as, b_as], a_as.type), a.dtype)
        return self._emit(kind, [a, b], a.type)

    def logical(self, kind: str, a, b) -> tensor:
        a = self.to_bool(self.to_tensor(a))
        b = self.to_bool(self.to_tensor(b))
        a, b = self.broadcast_pair(a, b)
        return self._emit(kind, [a, b], a.type)

    def compare(self, predicate: str, a, b) -> tensor:
        if isinstance(a, tensor) and a.dtype.is_ptr() or isinstance(b, tensor) and b.dtype.is_ptr():
            a, b = self.broadcast_pair(self.to_tensor(a), self.to_tensor(b))
            if a.dtype != b.dtype:
                raise TypeError(f"cannot compare {a.dtype} with {b.dtype}")
        else:
            a, b = self._promote(a, b)
        return self._emit("cmp", [a, b], T.with_element(a.type, T.int1), {"predicate": predicate})

    def to_bool(self, x: tensor) -> tensor:
        if x.dtype.is_bool():
            return x
        return self.compare("ne", x, 0)

    def neg(self, x) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise TypeError("cannot negate a pointer")
        return self._emit("neg", [x], x.type)

    def invert(self, x) -> tensor:
        x = self.to_tensor(x)
        if not x.dtype.is_int():
            raise TypeError(f"~ is defined for integers and booleans only, got {x.dtype}")
        return self._emit("not", [x], x.type)

    def logical_not(self, x) -> tensor:
        x = self.to_bool(self.to_tensor(x))
        return self._emit("not", [x], x.type)

    def abs(self, x) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_int_unsigned() or x.dtype.is_bool():
            return x
        return self._emit("abs", [x], x.type)

    def minmax(self, kind: str, a, b, propagate_nan: str = "none") -> tensor:
        a, b = self._promote(a, b)
        return self._emit(kind, [a, b], a.type, {"propagate_nan": propagate_nan} if a.dtype.is_floating() else None)

    def where(self, cond, a, b) -> tensor:
        cond = self.to_bool(self.to_tensor(cond))
        a_ptr = isinstance(a, tensor) and a.dtype.is_ptr()
        if a_ptr:
            a, b = self.to_tensor(a), self.to_tensor(b)
            if a.dtype != b.dtype:
                raise TypeError(f"tl.where branches have different pointer types {a.dtype} and {b.dtype}")
        else:
            a, b = self._promote(a, b)
        cond, a = self.broadcast_pair(cond, a)
        cond, b = self.broadcast_pair(cond, b)
        a, b = self.broadcast_pair(a, b)
        cond, a = self.broadcast_pair(cond, a)
        return self._emit("select", [cond, a, b], a.type)

    def math(self, fn: str, x) -> tensor:
        x = self.to_tensor(x)
        if fn in FP32_FP64_ONLY and x.dtype not in (T.float32, T.float64):
            raise ValueError(f"Expected dtype ['fp32', 'fp64'] but got {x.dtype}: tl.math.{fn} accepts fp32 and fp64 only; "
                             f"convert first, e.g. x.to(tl.float32)")
        if not x.dtype.is_floating():
            raise ValueError(f"tl.math.{fn} needs a floating-point argument, got {x.dtype}")
        return self._emit(fn, [x], x.type)

    def fma(self, x, y, z) -> tensor:
        x, y = self._promote(x, y)
        x, z = self._promote(x, z)
        x, y = self.broadcast_pair(x, y)
        if not x.dtype.is_floating():
            raise TypeError(f"fma needs floating-point arguments, got {x.dtype}")
        return self._emit("fma", [x, y, z], x.type)

    # memory ---------------------------------------------------------------------------
    def _check_pointer(self, ptr, what: str) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"{what} needs a pointer (a tensor argument plus offsets), got a value of type {ptr.type}")
        return ptr

    def load(self, ptr, mask=None, other=None) -> tensor:
        ptr = self._check_pointer(ptr, "tl.load")
        element = ptr.dtype.element_ty
        operands = [ptr]
        attrs = {}
        if mask is not None and unwrap(mask) is not None:
            mask = self.to_bool(self.to_tensor(mask))
            if mask.type.is_block() and not ptr.type.is_block():
                ptr = self.broadcast_to(ptr, mask.type.shape)
            mask = self.broadcast_to(mask, T.shape_of(ptr.type))
            operands = [ptr, mask]
            attrs["masked"] = True
            if other is not None and unwrap(other) is not None:
                other = self.broadcast_to(self.cast(self.to_tensor(other), element), T.shape_of(ptr.type))
                operands.append(other)
        elif other is not None and unwrap(other) is not None:
            pass  # `other` without a mask is ignored, as in Triton
        return self._emit("load", operands, T.with_element(ptr.type, element), attrs)

    def store(self, ptr, value, mask=None) -> None:
        ptr = self._check_pointer(ptr, "tl.store")
        element = ptr.dtype.element_ty
        value = self.to_tensor(value, element if _is_number(value) else None)
        if value.type.is_block() and not ptr.type.is_block():
            raise ValueError(f"cannot store a block of shape {list(value.type.shape)} through a scalar pointer")
        value = self.broadcast_to(self.cast(value, element), T.shape_of(ptr.type))
        operands = [ptr, value]
        if mask is not None and unwrap(mask) is not None:
            mask = self.broadcast_to(self.to_bool(self.to_tensor(mask)), T.shape_of(ptr.type))
            operands.append(mask)
        self._create("store", operands, [])

    _SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
    _SCOPES = ("gpu", "cta", "sys")
    # Element types each read-modify-write kind accepts (Triton's documentation of tl.atomic_*).
    _ATOMIC_TYPES = {
        "add": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "max": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "min": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
        "and": ("int32", "uint32", "int64", "uint64"),
        "or": ("int32", "uint32", "int64", "uint64"),
        "xor": ("int32", "uint32", "int64", "uint64"),
        "xchg": ("int32", "uint32", "int64", "uint64", "fp16", "bf16", "fp32", "fp64"),
    }

    def _memory_order(self, sem, scope) -> dict:
        sem = unwrap(sem) or "acq_rel"
        scope = unwrap(scope) or "gpu"
        if sem not in self._SEMANTICS:
            raise ValueError(f"sem must be one of {self._SEMANTICS}, got {sem!r}")
        if scope not in self._SCOPES:
            raise ValueError(f"scope must be one of {self._SCOPES}, got {scope!r}")
        return {"sem": sem, "scope": scope}

    def atomic_rmw(self, kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
        """Atomically combines ``val`` into memory; returns the values found there before."""
        ptr = self._check_pointer(ptr, f"tl.atomic_{kind}")
        element = ptr.dtype.element_ty
        if element.name not in self._ATOMIC_TYPES[kind]:
            raise TypeError(f"tl.atomic_{kind} does not support {element} "
                            f"(supported: {', '.join(self._ATOMIC_TYPES[kind])})")
        val = self.cast(self.to_tensor(val, element if _is_number(val) else None), element)
        if val.type.is_block() and not ptr.type.is_block():
            ptr = self.broadcast_to(ptr, val.type.shape)
        val = self.broadcast_to(val, T.shape_of(ptr.type))
        operands = [ptr, val]
        if mask is not None and unwrap(mask) is not None:
            operands.append(self.broadcast_to(self.to_bool(self.to_tensor(mask)), T.shape_of(ptr.type)))
        attrs = {"kind": kind, **self._memory_order(sem, scope)}
        return self._emit("atomic_rmw", operands, T.with_element(ptr.type, element), attrs)

    def atomic_cas(self, ptr, cmp, val, sem=None, scope=None) -> tensor:
        """Where memory equals ``cmp``, stores ``val``; returns the values found there before."""
        ptr = self._check_pointer(ptr, "tl.atomic_cas")
        element = ptr.dtype.element_ty
        if element.name not in ("int16", "uint16", "int32", "uint32", "int64", "uint64", "fp16", "fp32", "fp64"):
            raise TypeError(f"tl.atomic_cas does not support {element}")
        cmp = self.cast(self.to_tensor(cmp, element if _is_number(cmp) else None), element)
        val = self.cast(self.to_tensor(val, element if _is_number(val) else None), element)
        shape = T.shape_of(ptr.type)
        for x in (cmp, val):
            if x.type.is_block() and not shape:
                shape = x.type.shape
        ptr, cmp, val = (self.broadcast_to(x, shape) for x in (ptr, cmp, val))
        return self._emit("atomic_cas", [ptr, cmp, val], T.with_element(ptr.type, element),
                          self._memory_order(sem, scope))

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
        # Compiled Triton for NVIDIA pads small M and N for the tensor cores, but needs K of at
        # least 32 bytes' worth of 8-bit inputs, 16 of 16-bit, 8 of 32-bit, 4 of 64-bit.
        min_k = {8: 32, 16: 16, 32: 8, 64: 4}.get(a.dtype.primitive_bitwidth, 16)
        if k < min_k:
            raise ValueError(f"tl.dot of {a.dtype} inputs needs K >= {min_k}, got M={m}, N={n}, K={k}; "
                             f"pad the K dimension (and mask the loads) up to {min_k}")
        if a.dtype != b.dtype:
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

    # debugging --------------------------------------------------------------------------
    def device_print(self, prefix: str, args, hex=False) -> None:
        values = [self.to_tensor(a) for a in args]
        self._create("print", values, [], {"prefix": prefix, "hex": bool(hex)})

    def device_assert(self, cond, msg: str) -> None:
        cond = self.to_bool(self.to_tensor(cond))
        self._create("assert", [cond], [], {"message": msg})

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

    # libdevice ------------------------------------------------------------------------------------
    def libdevice(self, name: str, args, signatures: dict) -> tensor:
        """An elementwise libdevice function. ``signatures`` maps argument dtype names to
        (libdevice symbol, result dtype name). As in Triton, arguments whose types match no
        signature are first promoted to a common type, then looked up again."""
        values = [self.to_tensor(a) for a in args]
        key = tuple(v.dtype.name for v in values)
        if key not in signatures and len(values) > 1 and not any(v.dtype.is_ptr() for v in values):
            common = args[0]  # Python numbers stay weak: pow(fp16 x, 2.0) is (fp16, fp16), as in Triton
            for a in args[1:]:
                common, _ = self._promote(common, a)
            values = [self.cast(v, common.dtype) for v in values]
            key = tuple(v.dtype.name for v in values)
        if key not in signatures:
            accepted = " or ".join("(" + ", ".join(k) + ")" for k in signatures)
            got = ", ".join(v.dtype.name for v in values)
            raise ValueError(f"libdevice.{name} does not accept ({got}): it takes {accepted}; "
                             "convert the arguments first, e.g. x.to(tl.float32)")
        values = self._broadcast_all(values)
        symbol, result = signatures[key]
        return self._emit("libdevice", values, T.with_element(values[0].type, T.dtype(result)),
                          {"fn": name, "symbol": symbol})

    # shape ops: join, split, cat, flip, sort, gather, histogram --------------------------------------
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
