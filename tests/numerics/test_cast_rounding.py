"""Float downcasts rounded once, against exact rational arithmetic.

The oracle rounds the exact value of each input (``Fraction``) to the target format from the
format's three numbers alone (significant bits, smallest normal exponent, largest finite value):
round to nearest, ties to even (or toward zero with rtz), overflow to infinity for fp16/bf16 under
round-to-nearest, and saturation to the largest finite value for fp8, as the IR spec's cast says.
No numpy or ml_dtypes conversion is involved in choosing the result; the expected value, once
chosen, is exact in fp64 and converted to the target's bits exactly. On an H200 with Triton 3.6 the
GPU agreed with this oracle bit for bit on 4096 values for each conversion it compiles (fp32 to all
four types with rtne, fp32 to fp16/bf16/fp8e5 with rtz, fp64 to fp16/bf16); fp64 -> fp8 does not
compile there. ``numerics.arithmetic.cast`` is the function the interpreter's cast handler and
constant folding both call, so it is tested directly, then through a kernel on each path.
Tolerance: none, bits compared (any NaN matches any NaN).
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.compiler.ir import types as T
from tritium.numerics import arithmetic, elementwise

# name -> (significant bits including the implicit one, smallest normal exponent, largest finite value)
FORMATS = {
    "fp16": (11, -14, Fraction(2**11 - 1) * 2**(15 - 10)),
    "bf16": (8, -126, Fraction(2**8 - 1) * 2**(127 - 7)),
    "fp8e4nv": (4, -6, Fraction(448)),
    "fp8e5": (3, -14, Fraction(2**3 - 1) * 2**(15 - 2)),
}
NUMPY = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
         "fp8e4nv": np.dtype(ml_dtypes.float8_e4m3fn), "fp8e5": np.dtype(ml_dtypes.float8_e5m2)}
TYPES = {"fp16": T.float16, "bf16": T.bfloat16, "fp8e4nv": T.float8e4nv, "fp8e5": T.float8e5,
         "fp32": T.float32, "fp64": T.float64}


def exact_rounding(x: float, name: str, rounding: str) -> float:
    """``x`` rounded to the format ``name``, computed on the exact rational value of ``x``."""
    precision, min_exponent, largest = FORMATS[name]
    saturates = name.startswith("fp8")
    if math.isnan(x):
        return math.nan
    sign = math.copysign(1.0, x)
    if math.isinf(x):
        return sign * float(largest) if saturates else x
    magnitude = abs(Fraction(x))
    if magnitude == 0:
        return sign * 0.0
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1  # now 2**exponent <= magnitude < 2**(exponent + 1)
    quantum = Fraction(2) ** (max(exponent, min_exponent) - precision + 1)  # subnormals share the lowest
    steps = magnitude / quantum
    count = math.floor(steps) if rounding == "rtz" else round(steps)  # round() on a Fraction: ties to even
    result = count * quantum
    if result > largest:
        if saturates or rounding == "rtz":
            result = largest
        else:
            return sign * math.inf
    return sign * float(result)


def _ulp_steps(name: str) -> list[float]:
    """Values of the format near its edges: the largest finite value, just past it, the smallest
    normal and subnormal, the overflow midpoint."""
    precision, min_exponent, largest = FORMATS[name]
    smallest_subnormal = 2.0 ** (min_exponent - precision + 1)
    top_ulp = 2.0 ** (math.floor(math.log2(float(largest))) - precision + 1)
    return [float(largest), float(largest) + top_ulp / 2, float(largest) + top_ulp / 2 * (1 - 2**-30),
            float(largest) + top_ulp, 2.0 ** min_exponent, smallest_subnormal, smallest_subnormal / 2,
            smallest_subnormal / 2 * (1 + 2**-30), smallest_subnormal * 1.5, 2.0 ** min_exponent * (1 - 2**-40)]


def _inputs(name: str, seed: int) -> np.ndarray:
    """fp64 values for the format ``name``: random magnitudes across its whole range and past it,
    exact midpoints of neighbours, and values a hair above and below them (where rounding
    through fp32 first goes wrong), with both signs, plus the specials."""
    precision, min_exponent, largest = FORMATS[name]
    rng = np.random.default_rng(seed)
    top = math.floor(math.log2(float(largest)))
    spread = rng.standard_normal(600) * np.exp2(rng.integers(min_exponent - precision - 2, top + 3, 600))
    exponents = rng.integers(min_exponent - precision + 1, top + 1, 600)
    representable = (1 + rng.integers(0, 2 ** (precision - 1), 600) / 2 ** (precision - 1)) * np.exp2(exponents)
    half_ulp = np.exp2(np.maximum(exponents, min_exponent) - precision)
    hair = half_ulp * np.exp2(-rng.integers(24, 45, 600).astype(np.float64))  # below fp32's resolution there
    near = representable + half_ulp + rng.choice([-1.0, 0.0, 1.0], 600) * hair
    values = np.concatenate([spread, near, _ulp_steps(name), [1.125 + 2**-40, 1 + 2**-8 + 2**-30, 0.0, math.inf,
                                                               math.nan, 1e300, 1e-300, 3.0, 0.1]])
    signs = rng.choice([-1.0, 1.0], values.size)
    return np.concatenate([values * signs, -values[-9:]])


def _expected_bits(x: np.ndarray, name: str, rounding: str) -> np.ndarray:
    wide = np.array([exact_rounding(float(v), name, rounding) for v in x])
    return wide.astype(NUMPY[name])  # exact: each value is representable (or NaN)


def assert_same_bits(out: np.ndarray, expected: np.ndarray, inputs: np.ndarray, label: str) -> None:
    unsigned = np.dtype(f"uint{expected.dtype.itemsize * 8}")
    both_nan = np.isnan(out.astype(np.float32)) & np.isnan(expected.astype(np.float32))
    wrong = np.flatnonzero((out.view(unsigned) != expected.view(unsigned)) & ~both_nan)
    assert wrong.size == 0, [(label, float(inputs[i]), float(out[i]), float(expected[i])) for i in wrong[:5]]


@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("dst", list(FORMATS))
@pytest.mark.parametrize("src", ["fp64", "fp32"])
def test_downcast_rounds_once_like_exact_arithmetic(src, dst, rounding):
    x = _inputs(dst, seed=len(src) * 7 + len(dst))
    if src == "fp32":
        with np.errstate(all="ignore"):
            x = x.astype(np.float32)  # the fp32 inputs themselves; the oracle sees their exact values
    with np.errstate(all="ignore"):
        out = arithmetic.cast(x, TYPES[src], TYPES[dst], rounding)
    expected = _expected_bits(x, dst, rounding)
    assert out.dtype == NUMPY[dst]
    assert_same_bits(out, expected, x, f"{src}->{dst} {rounding}")
    # constant folding's entry point for the op (the interpreter's handler calls arithmetic.cast)
    folded = elementwise.evaluate("cast", [x], {"to": TYPES[dst], "rounding": rounding}, TYPES[src])
    assert_same_bits(folded, expected, x, f"folding {src}->{dst} {rounding}")


def test_the_case_that_rounded_twice():
    """1.125 + 2**-40 lies above the midpoint of e5m2's 1.0 and 1.25; fp32 cannot hold the 2**-40,
    so going through fp32 lands on the midpoint and ties down to 1.0."""
    x = np.array([1.125 + 2**-40, -(1.125 + 2**-40), 1.125 - 2**-40], np.float64)
    out = arithmetic.cast(x, T.float64, T.float8e5).astype(np.float64)
    assert out.tolist() == [1.25, -1.25, 1.0]


# the same conversion through a kernel: the interpreter's handler, and constant folding --------------------
@triton.jit
def _cast_loaded(x_ptr, out_ptr, DST: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets).to(DST))


@triton.jit
def _cast_constant(out_ptr, VALUE: tl.constexpr, DST: tl.constexpr):
    offsets = tl.arange(0, 2)
    tl.store(out_ptr + offsets, tl.full((2,), VALUE, tl.float64).to(DST))  # folded at compile time


_TL = {"fp16": tl.float16, "bf16": tl.bfloat16, "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5}


@pytest.mark.parametrize("dst", list(FORMATS))
def test_interpreter_cast_rounds_once(dst):
    x = _inputs(dst, seed=11)[:1024]
    out = np.zeros(x.size, NUMPY[dst])
    _cast_loaded[(1,)](x, out, DST=_TL[dst], N=x.size)
    assert_same_bits(out, _expected_bits(x, dst, "rtne"), x, f"kernel fp64->{dst}")


@pytest.mark.parametrize("value,dst", [(1.125 + 2**-40, "fp8e5"), (1 + 2**-4 + 2**-40, "fp8e4nv"),
                                       (1 + 2**-8 + 2**-30, "bf16"), (-(1 + 2**-11 + 2**-50), "fp16")])
def test_folded_cast_rounds_once(value, dst):
    out = np.zeros(2, NUMPY[dst])
    _cast_constant[(1,)](out, VALUE=value, DST=_TL[dst])
    assert out.astype(np.float64).tolist() == [exact_rounding(value, dst, "rtne")] * 2
