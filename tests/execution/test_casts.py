"""``x.to(dtype)`` and ``tl.cast``: conversions between every kind of type.

Oracles: plain Python (truncation and saturation written out), exact rationals (``Fraction``)
rounded once to the target type, bit patterns built by hand with numpy, torch's and
ml_dtypes' own conversions where those are correctly rounded. Tolerance: none, every
result is compared bit for bit (any NaN matches any NaN).
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from helpers_elementwise import INTS, NP, TL, assert_bits_equal, round_exact


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if ROUNDING == "default":
        y = x.to(DST)
    else:
        y = x.to(DST, fp_downcast_rounding=ROUNDING)
    tl.static_assert(y.dtype == DST)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def tl_cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.cast(tl.load(x_ptr + offs, mask=m), DST), mask=m)


@triton.jit
def bitcast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = x.to(DST, bitcast=True)
    z = tl.cast(x, DST, bitcast=True)
    tl.store(out_ptr + offs, tl.where(y == y, y, z), mask=m)  # noqa: PLR0124 - both spellings; NaN lanes come from z


def cast(x: np.ndarray, dst: str, rounding: str = "default", block: int = 64) -> np.ndarray:
    out = np.zeros(x.size, NP[dst])
    cast_kernel[(triton.cdiv(x.size, block),)](x, out, x.size, DST=TL[dst], ROUNDING=rounding, BLOCK=block)
    return out


def tl_cast(x: np.ndarray, dst: str, block: int = 64) -> np.ndarray:
    out = np.zeros(x.size, NP[dst])
    tl_cast_kernel[(triton.cdiv(x.size, block),)](x, out, x.size, DST=TL[dst], BLOCK=block)
    return out


# float -> int: truncate toward zero, saturate, NaN -> 0 ---------------------------------------------------
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, 1e10, -1e10, 2.7, -2.7, -0.5, 0.99, -0.0, 127.5, 128.0, -128.9,
                  -129.0, 255.9, 256.0, 32767.9, -32769.0, 65535.9, 65536.0, 2.0**31, -(2.0**31), 2.0**31 - 128,
                  2.0**32, 2.0**32 - 256, 2.0**63, -(2.0**63), 2.0**64, 3e38, -3e38, 1e300, 12345.678]


def saturating_truncation(value: float, dst: str) -> int:
    """What PTX's cvt.rzi does: NaN -> 0, otherwise truncate toward zero and clamp to the range."""
    width, signed = INTS[dst]
    lo, hi = (-(2 ** (width - 1)), 2 ** (width - 1) - 1) if signed else (0, 2**width - 1)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return hi if value > 0 else lo
    return min(hi, max(lo, math.trunc(value)))


@pytest.mark.parametrize("src", ["fp16", "bf16", "fp32", "fp64"])
@pytest.mark.parametrize("dst", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_float_to_int_truncates_and_saturates(src, dst):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL_FLOATS).astype(NP[src])
    out = cast(x, dst)
    expected = [saturating_truncation(float(v), dst) for v in x.astype(np.float64)]
    assert out.tolist() == expected, [(float(v), o, e) for v, o, e in zip(x, out.tolist(), expected) if o != e]


def test_float_to_int32_examples_from_the_spec():
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.99, -3.99], np.float32)
    assert cast(x, "int32").tolist() == [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 3, -3]
    assert tl_cast(x, "int32").tolist() == [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 3, -3]


def test_float_to_int_random_values_match_torch():
    """In range, truncation toward zero is what torch's .to(int) does too."""
    r = np.random.default_rng(5)
    x = (r.standard_normal(1000) * 1e6).astype(np.float32)
    np.testing.assert_array_equal(cast(x, "int32"), torch.from_numpy(x).to(torch.int32).numpy())
    np.testing.assert_array_equal(cast(x, "int64"), torch.from_numpy(x).to(torch.int64).numpy())


# int -> float: rounded once, to nearest even ---------------------------------------------------------------
def exact_ints(name: str) -> list[int]:
    width, signed = INTS[name]
    lo, hi = (-(2 ** (width - 1)), 2 ** (width - 1) - 1) if signed else (0, 2**width - 1)
    r = np.random.default_rng(11)
    values = {lo, hi, 0, 1, lo + 1, hi - 1}
    for k in range(1, width):  # powers of two and the ties just around them
        near_ties = [2**k + 2**(k - p) + d for p in (8, 11, 24, 53) if k - p >= 1 for d in (-1, 0, 1)]
        for v in [2**k, 2**k + 1, 2**k - 1, 2**k + 3] + near_ties:  # the midpoints of bf16/fp16/fp32/fp64
            for s in (v, -v):
                if lo <= s <= hi:
                    values.add(s)
    values.update(int(v) for v in r.integers(lo, hi, 200, endpoint=True, dtype=NP[name]))
    return sorted(values)


@pytest.mark.parametrize("src", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
@pytest.mark.parametrize("dst", ["fp16", "bf16", "fp32", "fp64"])
def test_int_to_float_rounds_once_to_nearest_even(src, dst):
    values = exact_ints(src)
    x = np.array(values, dtype=object).astype(NP[src])
    out = cast(x, dst)
    finite_max = Fraction(float(np.finfo(np.float16).max)) if dst == "fp16" else None
    expected = []
    for v in values:
        if finite_max is not None and abs(v) >= finite_max + 16:  # fp16: 65520 and up round to inf
            expected.append(math.copysign(math.inf, v))
        else:
            expected.append(round_exact(Fraction(v), NP[dst]))
    assert_bits_equal(out, np.array(expected).astype(NP[dst]) if dst != "bf16" else
                      np.array([float(e) for e in expected]).astype(NP[dst]), f"{src}->{dst}")


def test_int_to_bf16_is_not_rounded_twice():
    """2**24 + 2**16 + 1 lies just above the midpoint of two bf16 neighbours: it must round up.
    (Via fp32 it would first round to the midpoint, then tie to the even neighbour below.)"""
    x = np.array([2**24 + 2**16 + 1, -(2**24 + 2**16 + 1)], np.int32)
    assert cast(x, "bf16").astype(np.float64).tolist() == [2**24 + 2**17, -(2**24 + 2**17)]


def test_fp64_to_bf16_is_not_rounded_twice():
    x = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8 - 2**-30, -(1 + 2**-8 + 2**-30)], np.float64)
    assert cast(x, "bf16").astype(np.float64).tolist() == [1 + 2**-7, 1.0, -(1 + 2**-7)]


# fp32 -> fp16 / bf16 with rtne and rtz, at and around midpoints -----------------------------------------------
def neighbours(dtype_name: str, lows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of consecutive positive values of a 16-bit float type, from their bit patterns."""
    lo = np.array(lows, np.uint16).view(NP[dtype_name])
    hi = (np.array(lows, np.uint16) + 1).view(NP[dtype_name])
    return lo, hi


HALF_PATTERNS = {
    # normal numbers with even and odd last bits, subnormals, the largest finite neighbours
    "fp16": [0x3C00, 0x3C01, 0x4000, 0x4001, 0x0001, 0x0002, 0x03FF, 0x0400, 0x7BFE, 0x1234, 0x5555],
    "bf16": [0x3F80, 0x3F81, 0x4000, 0x4001, 0x0001, 0x0002, 0x007F, 0x0080, 0x7F7E, 0x1234, 0x5555],
}


@pytest.mark.parametrize("dst", ["fp16", "bf16"])
def test_downcast_midpoints_rtne_and_rtz(dst):
    lo, hi = neighbours(dst, HALF_PATTERNS[dst])
    lo32, hi32 = lo.astype(np.float32), hi.astype(np.float32)
    mid = ((lo32.astype(np.float64) + hi32.astype(np.float64)) / 2).astype(np.float32)
    assert (mid.astype(np.float64) == (lo32.astype(np.float64) + hi32.astype(np.float64)) / 2).all()  # exact
    above = np.nextafter(mid, np.float32(np.inf))
    below = np.nextafter(mid, np.float32(-np.inf))
    lo_is_even = (np.array(HALF_PATTERNS[dst]) % 2) == 0
    tie = np.where(lo_is_even, lo, hi)
    for sign in (1, -1):
        x = np.concatenate([mid, above, below, lo32, hi32]) * np.float32(sign)
        n = len(mid)
        rne_expected = np.concatenate([tie, hi, lo, lo, hi]).astype(np.float64) * sign
        rtz_expected = np.concatenate([lo, lo, lo, lo, hi]).astype(np.float64) * sign
        for rounding, expected in (("default", rne_expected), ("rtne", rne_expected), ("rtz", rtz_expected)):
            out = cast(x, dst, rounding)
            assert_bits_equal(out, expected.astype(NP[dst]), f"{dst} {rounding} sign {sign}")
        assert n == len(HALF_PATTERNS[dst])


@pytest.mark.parametrize("dst", ["fp16", "bf16"])
def test_downcast_specials_and_overflow(dst):
    finfo_max = float(np.finfo(np.float16).max) if dst == "fp16" else float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e10 if dst == "fp16" else 3.4e38, -1e10 if dst == "fp16"
                  else -3.4e38, 1e-30, -1e-30], np.float32)
    rne = cast(x, dst, "rtne").astype(np.float64)
    rtz = cast(x, dst, "rtz").astype(np.float64)
    assert np.isnan(rne[0]) and np.isnan(rtz[0])
    assert rne[1:5].tolist() == [math.inf, -math.inf, 0.0, 0.0] and rtz[1:5].tolist() == [math.inf, -math.inf, 0.0, 0.0]
    assert np.signbit(rne[4]) and np.signbit(rtz[4])
    assert rne[5:7].tolist() == [math.inf, -math.inf]  # out of range rounds to infinity
    assert rtz[5:7].tolist() == [finfo_max, -finfo_max]  # toward zero stops at the largest finite value
    if dst == "fp16":
        assert rne[7:].tolist() == [0.0, 0.0] and rtz[7:].tolist() == [0.0, 0.0]
        assert np.signbit(rne[8]) and np.signbit(rtz[8])


@pytest.mark.parametrize("dst", ["fp16", "bf16"])
def test_downcast_random_values_match_torch(dst):
    """torch's fp32 -> fp16/bf16 conversions round to nearest even: an independent second opinion."""
    r = np.random.default_rng(3)
    x = (r.standard_normal(2000) * np.exp2(r.integers(-20, 20, 2000))).astype(np.float32)
    tdt = torch.float16 if dst == "fp16" else torch.bfloat16
    expected = torch.from_numpy(x).to(tdt).view(torch.int16).numpy().view(NP[dst])
    assert_bits_equal(cast(x, dst), expected, f"fp32->{dst}")
    # rtz: the truncation of the fp32 bit pattern, for bf16 simply dropping the low 16 bits
    if dst == "bf16":
        truncated = (x.view(np.uint32) >> 16).astype(np.uint16).view(NP["bf16"])
        assert_bits_equal(cast(x, dst, "rtz"), truncated, "fp32->bf16 rtz")


def test_fp64_downcasts_round_once():
    r = np.random.default_rng(4)
    x = r.standard_normal(300) * np.exp2(r.integers(-10, 10, 300))
    for dst in ("fp32", "fp16", "bf16"):
        out = cast(x, dst)
        expected = np.array([float(round_exact(Fraction(float(v)), NP[dst])) for v in x]).astype(NP[dst])
        assert_bits_equal(out, expected, f"fp64->{dst}")


def test_rounding_mode_only_for_float_downcasts():
    x = np.ones(4, np.float16)
    with pytest.raises(triton.CompilationError, match="fp_downcast_rounding"):
        cast(x, "fp32", "rtz")
    with pytest.raises(triton.CompilationError, match="fp_downcast_rounding"):
        cast(np.ones(4, np.int32), "fp16", "rtz")
    with pytest.raises(triton.CompilationError):
        cast(np.ones(4, np.float32), "fp16", "rtp")


# fp8 ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dst,limit", [("fp8e4nv", 448.0), ("fp8e5", 57344.0)])
def test_fp32_to_fp8_saturates(dst, limit):
    x = np.array([1e6, -1e6, np.inf, -np.inf, limit, -limit, limit * 1.06, 3e38, np.nan], np.float32)
    out = cast(x, dst).astype(np.float64)
    assert out[:8].tolist() == [limit, -limit, limit, -limit, limit, -limit, limit, limit]
    assert np.isnan(out[8])


@pytest.mark.parametrize("dst,limit", [("fp8e4nv", 448.0), ("fp8e5", 57344.0)])
@pytest.mark.parametrize("src", ["fp32", "fp16", "bf16"])
def test_to_fp8_in_range_matches_ml_dtypes(src, dst, limit):
    r = np.random.default_rng(8)
    wide = np.concatenate([r.uniform(-limit, limit, 500), r.standard_normal(500) * 2.0 ** r.integers(-18, 0, 500)])
    x = wide.astype(NP[src])
    x = x[np.abs(x.astype(np.float64)) <= limit]
    expected = x.astype(np.float32).astype(NP[dst])  # ml_dtypes rounds fp32 to fp8 once, to nearest even
    assert_bits_equal(cast(x, dst), expected, f"{src}->{dst}")


@pytest.mark.parametrize("src", ["fp8e4nv", "fp8e5"])
@pytest.mark.parametrize("dst", ["fp16", "bf16", "fp32", "fp64"])
def test_fp8_upcasts_are_exact(src, dst):
    every = np.arange(256, dtype=np.uint8).view(NP[src])
    out = cast(every, dst, block=256)
    assert_bits_equal(out, every.astype(np.float32).astype(NP[dst]), f"{src}->{dst}")


# bitcast ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst", [("fp32", "int32"), ("int32", "fp32"), ("fp16", "int16"), ("bf16", "uint16"),
                                     ("uint16", "fp16"), ("fp64", "int64"), ("int64", "fp64"), ("uint32", "int32"),
                                     ("fp8e4nv", "uint8")])
def test_bitcast_is_bit_exact(src, dst):
    r = np.random.default_rng(9)
    width = NP[src].itemsize
    raw = r.integers(0, 2 ** (8 * width), 512, dtype=np.uint64, endpoint=False).astype(f"uint{8 * width}")
    raw[:4] = np.array([0, 2 ** (8 * width - 1), 2 ** (8 * width) - 1, 1], dtype=object).astype(raw.dtype)
    x = raw.view(NP[src])
    out = np.zeros(x.size, NP[dst])
    bitcast_kernel[(triton.cdiv(x.size, 128),)](x, out, x.size, DST=TL[dst], BLOCK=128)
    np.testing.assert_array_equal(out.view(raw.dtype), raw)  # every bit, NaN payloads included


def test_bitcast_fp32_int32_roundtrip_known_patterns():
    x = np.array([1.0, -2.0, 0.0, -0.0, np.inf, 1e-45], np.float32)
    out = np.zeros(6, np.int32)
    bitcast_kernel[(1,)](x, out, 6, DST=tl.int32, BLOCK=8)
    assert out.tolist() == [0x3F800000, -0x40000000, 0, -0x80000000, 0x7F800000, 1]


@pytest.mark.parametrize("src,dst", [("fp32", "int16"), ("fp16", "int32"), ("int8", "fp16"), ("fp64", "fp32")])
def test_bitcast_with_mismatched_widths_is_a_compile_error(src, dst):
    x = np.zeros(4, NP[src])
    with pytest.raises(triton.CompilationError, match="bit"):
        bitcast_kernel[(1,)](x, np.zeros(4, NP[dst]), 4, DST=TL[dst], BLOCK=4)


# int <-> int and int1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("src", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
@pytest.mark.parametrize("dst", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_int_to_int_wraps_and_extends_by_source_sign(src, dst):
    """Narrowing keeps the low bits; widening sign-extends signed and zero-extends unsigned sources."""
    values = exact_ints(src)
    x = np.array(values, dtype=object).astype(NP[src])
    width = INTS[dst][0]
    signed = INTS[dst][1]
    expected = []
    for v in values:
        low = v % 2**width
        expected.append(low - 2**width if signed and low >= 2 ** (width - 1) else low)
    assert cast(x, dst).tolist() == expected


@pytest.mark.parametrize("src", ["int8", "int32", "uint8", "int64", "fp32", "fp16", "bf16", "fp64"])
def test_to_int1_is_not_equal_zero(src):
    """Casting to int1 compares with zero (256 -> True, not its low bit); NaN != 0 is True."""
    if src.startswith(("fp", "bf")):
        x = np.array([0.0, -0.0, 0.5, -1e-3, np.nan, np.inf, 256.0, -2.0], NP[src])
    else:
        info = np.iinfo(NP[src])
        x = np.array([0, 1, 2, info.max, info.min, 256 % (int(info.max) + 1), 16, 0], NP[src])
    out = cast(x, "int1", block=8)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [bool(v != 0) if not math.isnan(v) else True for v in x.astype(np.float64)])


@pytest.mark.parametrize("dst", ["int8", "int32", "int64", "uint8", "uint32", "fp16", "bf16", "fp32", "fp64"])
def test_from_int1_is_zero_or_one(dst):
    """True becomes 1 (zero extension), never -1."""
    x = np.array([True, False, True, True, False])
    out = cast(x, dst, block=8)
    assert out.astype(np.float64).tolist() == [1.0, 0.0, 1.0, 1.0, 0.0]


def test_cast_to_same_type_is_identity_and_to_accepts_tl_cast_spelling():
    x = np.array([1.5, -2.25, np.nan], np.float32)
    assert_bits_equal(cast(x, "fp32", block=4), x, "fp32->fp32")
    assert_bits_equal(tl_cast(x, "fp16", block=4), x.astype(np.float16), "tl.cast")


def test_fp16_to_fp32_keeps_every_bit_pattern():
    """Every fp16 bit pattern widens exactly, NaN payloads and signalling NaNs included
    (the compiled widening loop must not quiet them). Oracle: the fp32 bits built by hand from the
    fp16 fields (sign, exponent rebiased by 112, mantissa shifted up 13; subnormals normalised)."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    sign, exponent, mantissa = bits >> 15, (bits >> 10) & 0x1F, bits & 0x3FF
    expected = np.zeros(1 << 16, dtype=np.uint32)
    normal = (exponent > 0) & (exponent < 31)
    expected[normal] = (exponent[normal] + 112) << 23 | mantissa[normal] << 13
    special = exponent == 31
    expected[special] = 0xFF << 23 | mantissa[special] << 13
    subnormal = (exponent == 0) & (mantissa > 0)
    values = mantissa[subnormal].astype(np.float64) * 2.0 ** -24  # exact in fp32
    expected[subnormal] = values.astype(np.float32).view(np.uint32)
    expected |= sign << 31
    x = bits.astype(np.uint16).view(np.float16)
    out = np.zeros(1 << 16, dtype=np.float32)
    cast_kernel[(64,)](x, out, 1 << 16, DST=tl.float32, ROUNDING="default", BLOCK=1024)
    np.testing.assert_array_equal(out.view(np.uint32), expected)
