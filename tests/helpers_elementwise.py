"""Shared facts for the promotion, elementwise and cast tests: dtype tables and small oracles.

Everything here is written from Triton's documented rules and IEEE-754, independently of
tritium's own tables, so that the tests compare two separate descriptions of the language.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

import ml_dtypes
import numpy as np

import tritium.language as tl

# Triton name -> numpy storage dtype (ml_dtypes supplies bf16 and the fp8 types).
NP = {
    "int1": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "fp8e4nv": np.dtype(ml_dtypes.float8_e4m3fn),
    "fp8e5": np.dtype(ml_dtypes.float8_e5m2),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "fp32": np.dtype(np.float32),
    "fp64": np.dtype(np.float64),
}

# Triton name -> the tl dtype object a kernel uses.
TL = {
    "int1": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
    "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp16": tl.float16, "bf16": tl.bfloat16,
    "fp32": tl.float32, "fp64": tl.float64,
}

# Integer facts as Triton defines them: (bit width, signed). int1 is in Triton's UINT_TYPES.
INTS = {
    "int1": (1, False),
    "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
    "uint8": (8, False), "uint16": (16, False), "uint32": (32, False), "uint64": (64, False),
}
FP8 = ("fp8e4nv", "fp8e5")
FLOATS = FP8 + ("fp16", "bf16", "fp32", "fp64")
STANDARD = ("int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "fp16", "bf16", "fp32", "fp64")
ALL = STANDARD + FP8


def kind(name: str) -> int:
    """Triton's kinds: bool < integral < floating."""
    if name == "int1":
        return 0
    return 2 if name in FLOATS else 1


def expected_binary(a: str, b: str, div_or_mod: bool = False):
    """The computation type of a binary arithmetic op on two tensors; None where Triton raises.

    1) fp64 wins; 2) then fp32; 3) fp16 with anything else is fp16 (fp32 for / and %);
    4) bf16 only with bf16 (fp32 for / and %), bf16 with anything else is fp32;
    5) two fp8 types: the same type, or fp16 when they differ; fp8 with an integer is an error;
    6) integers: C's usual arithmetic conversions; / and % refuse mixed signedness.
    """
    pair = (a, b)
    if "fp64" in pair:
        return "fp64"
    if "fp32" in pair:
        return "fp32"
    if "fp16" in pair:
        return "fp32" if div_or_mod else "fp16"
    if "bf16" in pair:
        return "bf16" if a == b and not div_or_mod else "fp32"
    if a in FP8 or b in FP8:
        if a in FP8 and b in FP8:
            return a if a == b else "fp16"
        return None
    (wa, sa), (wb, sb) = INTS[a], INTS[b]
    if sa == sb:
        return a if wa >= wb else b
    if div_or_mod:
        return None
    unsigned, signed = (a, b) if not sa else (b, a)
    return unsigned if INTS[unsigned][0] >= INTS[signed][0] else signed


def expected_truediv(a: str, b: str):
    ty = expected_binary(a, b, div_or_mod=True)
    if ty is not None and ty in INTS:
        return "fp32"
    return ty


def literal_type(value) -> str:
    """The type a Python number takes in a kernel: the smallest of int32 < uint32 < int64 < uint64,
    or fp32 when the float is representable in fp32's normal range (or is 0, inf or nan), else fp64."""
    if isinstance(value, bool):
        return "int1"
    if isinstance(value, int):
        for name, lo, hi in (("int32", -2**31, 2**31), ("uint32", 0, 2**32), ("int64", -2**63, 2**63),
                             ("uint64", 0, 2**64)):
            if lo <= value < hi:
                return name
        raise OverflowError(value)
    mag = abs(value)
    if mag == 0.0 or math.isinf(mag) or math.isnan(value) or 2.0**-126 <= mag <= float(np.finfo(np.float32).max):
        return "fp32"
    return "fp64"


def int_range(name: str) -> tuple[int, int]:
    width, signed = INTS[name]
    if name == "int1":
        return 0, 1
    return (-(2 ** (width - 1)), 2 ** (width - 1) - 1) if signed else (0, 2**width - 1)


def expected_with_scalar(tensor_ty: str, value, div_or_mod: bool = False, truediv: bool = False):
    """Type of ``tensor <op> python_number``; None where Triton refuses the expression.

    A scalar of the same or a lower kind takes the tensor's type (fp16/bf16 become fp32 for
    / and %); a scalar of a higher kind takes its literal type and then promotes as a tensor would.
    An integer scalar must fit the integer result type (and be >= 0 for an unsigned one).
    """
    s_kind = kind("int1" if isinstance(value, bool) else "fp32" if isinstance(value, float) else "int32")
    if s_kind <= kind(tensor_ty):
        result = tensor_ty
        if div_or_mod and tensor_ty in ("fp16", "bf16"):
            result = "fp32"
    else:
        result = expected_binary(tensor_ty, literal_type(value), div_or_mod)
    if result is None:
        return None
    if result in INTS and not isinstance(value, float):
        lo, hi = int_range(result)
        if not lo <= int(value) <= hi:
            return None
    if truediv and result in INTS:
        return "fp32"
    return result


_IR_TO_NAME = {TL[n].ir_name: n for n in TL}


def ir_result_types(ir_text: str, opcode: str) -> list[str]:
    """The Triton dtype names of the results of every ``opcode`` operation in printed IR."""
    found = []
    for m in re.finditer(rf"= {opcode}\b[^\n]*?: (\S+)", ir_text):
        ty = m.group(1)
        element = ty.rsplit("x", 1)[-1].rstrip(">") if ty.startswith("<") else ty
        found.append(_IR_TO_NAME[element])
    return found


def bits(x: np.ndarray) -> np.ndarray:
    """The raw bits of an array, as unsigned integers of the same width (for bit-exact compares)."""
    x = np.ascontiguousarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    return x.view(f"uint{x.dtype.itemsize * 8}")


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Bit-exact equality, except that any NaN matches any NaN."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    same = bits(actual) == bits(expected)
    if actual.dtype.kind == "f" or actual.dtype in (NP["bf16"], NP["fp8e4nv"], NP["fp8e5"]):
        a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
        same |= np.isnan(a64) & np.isnan(e64)
    if not same.all():
        bad = np.flatnonzero(~same.reshape(-1))[:8]
        raise AssertionError(f"{what}: {len(np.flatnonzero(~same))} mismatches; first at {bad.tolist()}: "
                             f"got {actual.reshape(-1)[bad].tolist()} expected {expected.reshape(-1)[bad].tolist()}")


def ulp_distance_fp32(actual: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """How many fp32 steps separate ``actual`` (fp32) from the exact ``reference`` (fp64)."""
    actual = np.asarray(actual, dtype=np.float32)
    ref32 = np.asarray(reference, dtype=np.float64).astype(np.float32)

    def ordered(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(actual) - ordered(ref32))


def round_exact(value: Fraction, dtype) -> float:
    """The finite ``dtype`` value nearest to the exact rational ``value`` (ties to the even bit
    pattern), found by bracketing ``value`` among the neighbours of a first approximation.
    Only for values inside the finite range (overflow to inf is not modelled)."""
    dtype = np.dtype(dtype)
    approx = np.array([float(value)]).astype(dtype)
    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
    base = int(approx.view(unsigned)[0])
    best = None
    for step in range(-3, 4):
        pattern = base + step
        if not 0 <= pattern < 2 ** (8 * dtype.itemsize):
            continue
        cand = np.array([pattern], unsigned).view(dtype)
        wide = float(cand.astype(np.float64)[0])
        if not math.isfinite(wide):
            continue
        key = (abs(Fraction(wide) - value), pattern % 2)
        if best is None or key < best[0]:
            best = (key, cand[0])
    return best[1]


def ieee_max(a, b):
    """fmax with IEEE 754-2019's signed zeros (-0 < +0), written independently of tritium."""
    a, b = np.asarray(a), np.asarray(b)
    out = np.fmax(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a) & np.signbit(b), a, np.abs(a)), out).astype(out.dtype)


def ieee_min(a, b):
    """fmin with IEEE 754-2019's signed zeros (-0 < +0)."""
    a, b = np.asarray(a), np.asarray(b)
    out = np.fmin(a, b)
    both_zero = (a == 0) & (b == 0)
    negative_zero = -np.abs(a)
    return np.where(both_zero, np.where(np.signbit(a) | np.signbit(b), negative_zero, np.abs(a)), out).astype(out.dtype)
