"""What elementwise ops mean: casts, arithmetic with Triton's promotion, comparisons, math, libdevice."""
from __future__ import annotations

from typing import Optional

from ..language.core import tensor, unwrap
from .ir import types as T
from .ir.spec import FP_ONLY, opcodes_with
from .promotion import PromotionError, computation_type, python_scalar_type


def _is_number(x) -> bool:
    x = unwrap(x)
    return isinstance(x, (bool, int, float)) and not isinstance(x, tensor)


# Functions that Triton's math library restricts to fp32/fp64 (triton.language.math): the ops the IR
# spec marks fp_only, and div_rn (a function on the div op, which elsewhere takes other floats too).
FP32_FP64_ONLY = opcodes_with(FP_ONLY) | {"div_rn"}


class ElementwiseSemantics:
    """The elementwise ops of ``Semantic`` (see semantics.py): casts, arithmetic, comparisons, math."""

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
        if dtype.is_fp8e4b15() and not (src.is_fp16() or src.is_fp32()):
            raise TypeError(f"cannot convert {src} to fp8e4b15: Triton converts to fp8e4b15 from fp16 and fp32 only; "
                            "convert to fp32 first, e.g. x.to(tl.float32).to(tl.float8e4b15)")
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
    @staticmethod
    def _no_fp8e4b15_arithmetic(*types) -> None:
        if any(t.is_fp8e4b15() for t in types):
            raise TypeError("fp8e4b15 has no arithmetic, comparisons or math (Triton does not compile them on it): "
                            "convert first, e.g. x.to(tl.float32), and convert the result back")

    def _promote(self, a, b, div_or_mod=False, allow_ptr=False) -> tuple[tensor, tensor]:
        a_weak, b_weak = _is_number(a), _is_number(b)
        a_ty = python_scalar_type(unwrap(a)) if a_weak else self.to_tensor(a).dtype
        b_ty = python_scalar_type(unwrap(b)) if b_weak else self.to_tensor(b).dtype
        if a_ty.is_ptr() or b_ty.is_ptr():
            raise TypeError(f"this operator is not defined for {a_ty} and {b_ty}")
        self._no_fp8e4b15_arithmetic(a_ty, b_ty)
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
        return self.approximate_div(a, b)

    def approximate_div(self, a, b) -> tensor:
        """Triton's ``/``: on fp32, div.full.f32 on an NVIDIA GPU (within 2 ulp); correctly rounded
        on other types. The IR records which, so a compiled backend emits the same instruction."""
        return self._emit("div", [a, b], a.type, {"rounding": "full"} if a.dtype.is_fp32() else None)

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
        self._no_fp8e4b15_arithmetic(x.dtype)
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
        if x.dtype.is_fp8e4b15():  # as Triton does: the format has no arithmetic, so clear the sign bit
            bits = self.cast(x, T.int8, bitcast=True)
            return self.cast(self.bitwise("and", bits, self.constant(0x7F, T.int8)), x.dtype, bitcast=True)
        return self._emit("abs", [x], x.type)

    def minmax(self, kind: str, a, b, propagate_nan: str = "none") -> tensor:
        a, b = self._promote(a, b)
        return self._emit(kind, [a, b], a.type, {"propagate_nan": propagate_nan} if a.dtype.is_floating() else None)

    def clamp(self, x, low, high, propagate_nan: str = "none") -> tensor:
        """tl.clamp: ``minimum(maximum(x, low), high)``, promoted as those two would be, x with low
        first. Floats are those two ops; integers one ``clamp`` op in the type of all three (a bound
        that widens the type widens the other bound too)."""
        x, low = self._promote(x, low)
        high_value = unwrap(high)
        if x.dtype.is_floating() or (isinstance(high_value, float) if _is_number(high_value)
                                     else self.to_tensor(high_value).dtype.is_floating()):
            return self.minmax("minimum", self.minmax("maximum", x, low, propagate_nan), high, propagate_nan)
        x, high = self._promote(x, high)
        x, low, high = self._broadcast_all([x, self.cast(low, x.dtype), high])
        return self._emit("clamp", [x, low, high], x.type)

    def where(self, cond, a, b) -> tensor:
        cond = self.to_bool(self.to_tensor(cond))
        a_ptr = isinstance(a, tensor) and a.dtype.is_ptr()
        if a_ptr:
            a, b = self.to_tensor(a), self.to_tensor(b)
            if a.dtype != b.dtype:
                raise TypeError(f"tl.where branches have different pointer types {a.dtype} and {b.dtype}")
        elif self._selects_fp8e4b15(a, b):
            a, b = (self.to_tensor(v) if isinstance(unwrap(v), tensor) else self.constant(v, T.float8e4b15)
                    for v in (a, b))
        else:
            a, b = self._promote(a, b)
        cond, a = self.broadcast_pair(cond, a)
        cond, b = self.broadcast_pair(cond, b)
        a, b = self.broadcast_pair(a, b)
        cond, a = self.broadcast_pair(cond, a)
        return self._emit("select", [cond, a, b], a.type)

    @staticmethod
    def _selects_fp8e4b15(a, b) -> bool:
        """True for ``tl.where`` between fp8e4b15 values (or one and a Python number), which needs no
        arithmetic; mixed with another type, the promotion refuses it."""
        types = [unwrap(v).dtype for v in (a, b) if isinstance(unwrap(v), tensor)]
        return any(t.is_fp8e4b15() for t in types) and all(t.is_fp8e4b15() for t in types)

    def math(self, fn: str, x) -> tensor:
        x = self.to_tensor(x)
        self._no_fp8e4b15_arithmetic(x.dtype)
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

    # libdevice ------------------------------------------------------------------------------------
    def libdevice_arguments(self, name: str, args, signatures) -> tuple[list, tuple]:
        """``args`` as broadcast tensors whose dtype names are one of ``signatures`` (the keys of a
        dict, or a list of tuples), and that key. As in Triton, arguments whose types match no
        signature are first promoted to a common type, then looked up again."""
        values = [self.to_tensor(a) for a in args]
        self._no_fp8e4b15_arithmetic(*(v.dtype for v in values))
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
            example = "float32" if T.dtype(next(iter(signatures))[0]).is_floating() else "int32"
            raise ValueError(f"libdevice.{name} does not accept ({got}): it takes {accepted}; "
                             f"convert the arguments first, e.g. x.to(tl.{example})")
        return self._broadcast_all(values), key

    def libdevice(self, name: str, args, signatures: dict) -> tensor:
        """An elementwise libdevice function. ``signatures`` maps argument dtype names to
        (libdevice symbol, result dtype name) (``libdevice_arguments``)."""
        values, key = self.libdevice_arguments(name, args, signatures)
        symbol, result = signatures[key]
        return self._emit("libdevice", values, T.with_element(values[0].type, T.dtype(result)),
                          {"fn": name, "symbol": symbol})
