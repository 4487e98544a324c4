"""The types of the tile IR: scalar dtypes (a table of facts), pointers, and fixed-shape blocks.

These are also the dtypes users see as ``tl.float32`` and friends: one object, one meaning.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np


class Kind(enum.IntEnum):
    """Ordering used by the weak-scalar promotion rule: bool < uint < int < float."""

    BOOL = 0
    UINT = 1
    INT = 2
    FLOAT = 3


@dataclass(frozen=True)
class _Facts:
    kind: Kind
    bits: int
    ir_name: str
    numpy_name: str  # resolved lazily: ml_dtypes supplies bf16 and fp8
    mantissa: int = 0  # explicit mantissa bits of a float type
    exponent: int = 0
    bias: int = 0  # the exponent's bias where it is not the IEEE one, 2**(exponent-1) - 1


# name -> facts. Names are Triton's (`str(tl.float32) == "fp32"`).
_DTYPE_FACTS: dict[str, _Facts] = {
    "int1": _Facts(Kind.BOOL, 1, "i1", "bool"),
    "int8": _Facts(Kind.INT, 8, "i8", "int8"),
    "int16": _Facts(Kind.INT, 16, "i16", "int16"),
    "int32": _Facts(Kind.INT, 32, "i32", "int32"),
    "int64": _Facts(Kind.INT, 64, "i64", "int64"),
    "uint8": _Facts(Kind.UINT, 8, "u8", "uint8"),
    "uint16": _Facts(Kind.UINT, 16, "u16", "uint16"),
    "uint32": _Facts(Kind.UINT, 32, "u32", "uint32"),
    "uint64": _Facts(Kind.UINT, 64, "u64", "uint64"),
    "fp8e4nv": _Facts(Kind.FLOAT, 8, "fp8e4nv", "float8_e4m3fn", mantissa=3, exponent=4),
    "fp8e5": _Facts(Kind.FLOAT, 8, "fp8e5", "float8_e5m2", mantissa=2, exponent=5),
    # bias 15 (not 7): stored as its codes, converted by numerics/fp8e4b15.py
    "fp8e4b15": _Facts(Kind.FLOAT, 8, "fp8e4b15", "uint8", mantissa=3, exponent=4, bias=15),
    "fp16": _Facts(Kind.FLOAT, 16, "fp16", "float16", mantissa=10, exponent=5),
    "bf16": _Facts(Kind.FLOAT, 16, "bf16", "bfloat16", mantissa=7, exponent=8),
    "fp32": _Facts(Kind.FLOAT, 32, "fp32", "float32", mantissa=23, exponent=8),
    "fp64": _Facts(Kind.FLOAT, 64, "fp64", "float64", mantissa=52, exponent=11),
}


def _numpy_dtype(numpy_name: str) -> np.dtype:
    if hasattr(np, numpy_name) and numpy_name not in ("bfloat16",):
        return np.dtype(numpy_name)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, numpy_name))


class dtype:
    """A scalar element type. Compared by name; immutable."""

    __slots__ = ("name",)

    # Name lists Triton exposes on ``tl.dtype`` (fp8 variants tritium lacks are left out).
    SINT_TYPES: ClassVar[list[str]] = ["int8", "int16", "int32", "int64"]
    UINT_TYPES: ClassVar[list[str]] = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES: ClassVar[list[str]] = ["fp8e4b15", "fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES: ClassVar[list[str]] = ["fp16", "bf16", "fp32", "fp64"]

    def __init__(self, name: str):
        if name not in _DTYPE_FACTS:
            known = ", ".join(_DTYPE_FACTS)
            raise ValueError(f"unknown dtype {name!r}; known dtypes: {known}")
        object.__setattr__(self, "name", name)

    def __setattr__(self, key, value):
        raise AttributeError("dtype objects are immutable")

    @property
    def _facts(self) -> _Facts:
        return _DTYPE_FACTS[self.name]

    # identity ---------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{_REPR_NAMES.get(self.name, self.name)}"

    def __reduce__(self):
        return (dtype, (self.name,))

    # facts ------------------------------------------------------------------
    @property
    def kind(self) -> Kind:
        return self._facts.kind

    @property
    def ir_name(self) -> str:
        return self._facts.ir_name

    @property
    def primitive_bitwidth(self) -> int:
        return self._facts.bits

    @property
    def int_bitwidth(self) -> int:
        return self._facts.bits

    @property
    def fp_mantissa_width(self) -> int:
        return self._facts.mantissa

    @property
    def exponent_bias(self) -> int:
        """The bias of a float type's exponent field (fp16: 15, fp32: 127), as Triton's dtypes have it."""
        if self.kind != Kind.FLOAT:
            raise AttributeError(f"{self.name} is not a floating-point type and has no exponent_bias")
        return self._facts.bias or (1 << (self._facts.exponent - 1)) - 1

    @property
    def itemsize(self) -> int:
        return max(1, self._facts.bits // 8)

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype that stores this type (ml_dtypes for bf16 and fp8)."""
        return _numpy_dtype(self._facts.numpy_name)

    @property
    def scalar(self) -> dtype:
        return self

    def is_floating(self) -> bool:
        return self.kind == Kind.FLOAT

    def is_int(self) -> bool:
        return self.kind in (Kind.INT, Kind.UINT, Kind.BOOL)

    def is_int_signed(self) -> bool:
        return self.kind in (Kind.INT, Kind.BOOL)

    def is_int_unsigned(self) -> bool:
        return self.kind == Kind.UINT

    def is_bool(self) -> bool:
        return self.kind == Kind.BOOL

    def is_fp8(self) -> bool:
        return self.name.startswith("fp8")

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_standard_floating(self) -> bool:
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def to(self, *args, **kwargs):  # pragma: no cover - guidance only
        raise TypeError("dtypes are not values; call .to() on a tensor")


_REPR_NAMES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
    "fp8e4nv": "float8e4nv",
    "fp8e5": "float8e5",
    "fp8e4b15": "float8e4b15",
}


class pointer_type:
    """A pointer to elements of ``element_ty`` in global memory."""

    __slots__ = ("element_ty",)
    const = False  # a pointer to constant data (``const_pointer_type``): the frontend refuses stores through it

    def __init__(self, element_ty: dtype):
        object.__setattr__(self, "element_ty", element_ty)

    def __setattr__(self, key, value):
        raise AttributeError("pointer types are immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty))

    @property
    def name(self) -> str:
        return f"pointer<{self.element_ty}>"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def ir_name(self) -> str:
        return f"ptr<{self.element_ty.ir_name}>"

    @property
    def scalar(self) -> pointer_type:
        return self

    @property
    def kind(self) -> Kind:
        return Kind.UINT

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    @property
    def itemsize(self) -> int:
        return 8

    def is_ptr(self) -> bool:
        return True

    def is_block(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    def is_fp8(self) -> bool:
        return False

    def is_fp8e4b15(self) -> bool:
        return False

    def is_fp8e4nv(self) -> bool:
        return False

    def is_fp8e5(self) -> bool:
        return False

    def is_fp16(self) -> bool:
        return False

    def is_bf16(self) -> bool:
        return False

    def is_fp32(self) -> bool:
        return False

    def is_fp64(self) -> bool:
        return False

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False


ScalarType = Any  # dtype | pointer_type


class const_pointer_type(pointer_type):
    """A pointer to constant data: what a kernel parameter annotated ``tl.const`` holds, and the
    pointers computed from it. The frontend refuses to store through it, as Triton does. It equals
    the plain pointer type (the IR and the backends do not tell them apart): constness is checked
    while the kernel is compiled, and is not printed in the IR."""

    __slots__ = ()
    const = True

    @property
    def name(self) -> str:
        return f"const pointer<{self.element_ty}>"


class block_type:
    """A block of ``shape`` elements of ``element_ty``; the shape is fixed at compile time."""

    __slots__ = ("element_ty", "shape")

    def __init__(self, element_ty, shape):
        object.__setattr__(self, "element_ty", element_ty)
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))

    def __setattr__(self, key, value):
        raise AttributeError("block types are immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, block_type) and (other.element_ty, other.shape) == (self.element_ty, self.shape)

    def __hash__(self) -> int:
        return hash(("block", self.element_ty, self.shape))

    @property
    def scalar(self):
        return self.element_ty

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def name(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty}>"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def ir_name(self) -> str:
        return "<" + "x".join(str(s) for s in self.shape) + "x" + self.element_ty.ir_name + ">"

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def __getattr__(self, item):
        # Predicates such as is_floating() answer for the element type.
        if item.startswith("is_"):
            return getattr(self.element_ty, item)
        raise AttributeError(item)


def shape_of(ty) -> tuple[int, ...]:
    return ty.shape if isinstance(ty, block_type) else ()


def with_element(ty, element_ty):
    """The same shape as ``ty`` with another element type."""
    return block_type(element_ty, ty.shape) if isinstance(ty, block_type) else element_ty


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e4b15 = dtype("fp8e4b15")
float8e5 = dtype("fp8e5")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")

ALL_DTYPES = [dtype(n) for n in _DTYPE_FACTS]

_IR_NAMES = {facts.ir_name: name for name, facts in _DTYPE_FACTS.items()}


def dtype_from_ir_name(text: str) -> Optional[dtype]:
    name = _IR_NAMES.get(text)
    return dtype(name) if name else None
