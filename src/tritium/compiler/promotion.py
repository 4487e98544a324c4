"""Triton's type-promotion rules, all in one place.

Source: Triton's documentation of type promotion and ``semantic.computation_type_impl``.
A Python number in an expression is a *weak* scalar: when it is of the same or a lower kind
(bool < integral < float; signed and unsigned integers are one kind) than the tensor operand, it
takes the tensor's type: ``(uint8, int) -> uint8``.
"""
from __future__ import annotations

import math

from .ir import types as T


class PromotionError(TypeError):
    pass


def integer_promote(a: T.dtype, b: T.dtype) -> T.dtype:
    """C's usual arithmetic conversions for two integer types (cppreference, 'conversion')."""
    a_rank, b_rank = a.int_bitwidth, b.int_bitwidth
    a_unsigned, b_unsigned = a.is_int_unsigned(), b.is_int_unsigned()
    if a_unsigned == b_unsigned:
        return a if a_rank > b_rank else b
    if a_unsigned:
        return a if a_rank >= b_rank else b
    return b if b_rank >= a_rank else a


def _triton_kind(ty: T.dtype) -> int:
    """Triton's kinds for the weak-scalar rule: bool < integral < floating."""
    return 0 if ty.is_bool() else 2 if ty.is_floating() else 1


def _is_unsigned(ty: T.dtype) -> bool:
    """Signedness as Triton defines it: int1 is one of its unsigned types."""
    return ty.is_int_unsigned() or ty.is_bool()


def computation_type(a: T.dtype, a_weak: bool, b: T.dtype, b_weak: bool, div_or_mod: bool = False) -> T.dtype:
    """The type both operands of an arithmetic operator are converted to.

    Numbered as in Triton:
      0) a weak scalar of the same or a lower kind than the other operand takes its type
         (fp16/bf16 become fp32 for / and %);
      1) fp64 wins; 2) then fp32; 3) then fp16 (fp32 for / and %);
      4) bf16 only when both are bf16 (fp32 for / and %), else fp32;
      5) two fp8 types: the type if equal, else fp16;
      6) integers follow C's usual arithmetic conversions; / and % refuse mixed signedness.
    """
    if a_weak != b_weak:
        scalar, tensor = (a, b) if a_weak else (b, a)
        if _triton_kind(scalar) <= _triton_kind(tensor):
            if div_or_mod and tensor in (T.float16, T.bfloat16):
                return T.float32
            return tensor
    if a.is_fp64() or b.is_fp64():
        return T.float64
    if a.is_fp32() or b.is_fp32():
        return T.float32
    if a.is_fp16() or b.is_fp16():
        return T.float32 if div_or_mod else T.float16
    if a.is_bf16() and b.is_bf16():
        return T.float32 if div_or_mod else T.bfloat16
    if a.is_bf16() or b.is_bf16():
        return T.float32
    if a.is_fp8() and b.is_fp8():
        return a if a == b else T.float16
    if not a.is_int() or not b.is_int():
        raise PromotionError(f"unexpected types {a} and {b}")
    if div_or_mod and _is_unsigned(a) != _is_unsigned(b):
        raise PromotionError(
            f"Cannot use /, // or % with {a} and {b} because they have different signedness; "
            "cast them to the same signedness"
        )
    return integer_promote(a, b)


def python_scalar_type(value) -> T.dtype:
    """The type a Python number takes inside a kernel (Triton's ``to_tensor`` rules)."""
    if isinstance(value, bool):
        return T.int1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return T.int32
        if 2**31 <= value < 2**32:
            return T.uint32
        if -(2**63) <= value < 2**63:
            return T.int64
        if 2**63 <= value < 2**64:
            return T.uint64
        raise OverflowError(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        magnitude = abs(value)
        if (magnitude == float("inf") or magnitude == 0.0 or math.isnan(value)
                or 2.0**-126 <= magnitude <= 3.4028234663852886e38):
            return T.float32
        return T.float64
    raise TypeError(f"{type(value).__name__} is not a number")
