"""Arithmetic as an NVIDIA GPU does it, on numpy arrays: casts, integer division, fma, dot, reductions.

- integer ``//`` and ``%`` truncate toward zero (C semantics); ``x // 0`` is -1 (all ones),
  as measured on an H200;
- float -> int conversion saturates: NaN -> 0, +inf -> INT_MAX, -inf -> INT_MIN (PTX cvt.rzi.sat);
- float downcasts round to nearest even, or toward zero with ``rtz``; fp8 conversions saturate
  to the largest finite value (448 for e4m3, 57344 for e5m2) instead of producing NaN/inf;
- float ``atomic_max``/``atomic_min`` order by IEEE totalOrder (the bits), ``atomic_cas`` compares bits;
- fp32 transcendental functions are computed in fp64 and rounded once;
- reductions combine in a fixed binary tree (pairs of halves), as a GPU's butterfly does.
"""
from __future__ import annotations

import sys


import numpy as np

from ..compiler.ir import types as T
from . import fp8e4b15, libm, native_loops


def _float_bits_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


def _round_toward_zero(x: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """Turns a round-to-nearest result into round-toward-zero by stepping back one ulp."""
    wide = x.astype(np.float64)
    back = rounded.astype(np.float64)
    too_far = np.isfinite(wide) & (np.abs(back) > np.abs(wide))
    if not too_far.any():
        return rounded
    bits = rounded.view(_float_bits_dtype(rounded.dtype)).copy()
    bits[too_far] -= 1  # same sign, one step smaller in magnitude (inf steps to the largest finite)
    return bits.view(rounded.dtype)


def _saturate_fp8(x: np.ndarray, dst: T.dtype) -> np.ndarray:
    """``x`` clipped to the fp8 type's finite range (NaN stays), in fp64 when ``x`` is fp64 (exactly:
    no rounding yet), else in fp32 (which holds every narrower value)."""
    limit = 448.0 if dst.name == "fp8e4nv" else 57344.0
    wide = x if x.dtype == np.float64 else x.astype(np.float32)
    return np.where(np.isnan(wide), wide, np.clip(wide, -limit, limit))


def narrow_float(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """A float array converted to a float type of at most its precision, rounded once to nearest
    even, without saturating. numpy converts fp64 to fp32 and fp16 directly, but ml_dtypes converts
    fp64 to bf16 and fp8 through fp32, rounding twice; so fp64 is first rounded to odd in fp32 (24
    bits, at least two more than those types keep), and rounding that to nearest gives what rounding
    the fp64 value once does."""
    target = np.dtype(target)
    if x.dtype == np.float64 and target.itemsize <= 2 and target != np.float16:  # bf16 and fp8
        x = _fp64_to_fp32_round_to_odd(x)
    return x.astype(target)


def _fp64_to_fp32_round_to_odd(wide: np.ndarray) -> np.ndarray:
    """fp64 -> fp32, rounded to odd when inexact: rounding that to a type of at most 22 bits
    (bf16) then gives the once-rounded result; rounding twice to nearest would not."""
    narrow = np.ascontiguousarray(wide.astype(np.float32))
    back = narrow.astype(np.float64)
    even = (narrow.view(np.uint32) & np.uint32(1)) == 0
    step = (back != wide) & even & np.isfinite(narrow)
    toward = np.where(wide > back, np.float32(np.inf), np.float32(-np.inf))
    return np.where(step, np.nextafter(narrow, toward), narrow)


def _int_to_fp64_round_to_odd(x: np.ndarray) -> np.ndarray:
    """An integer array as fp64, rounded to odd when a 64-bit value does not fit in 53 bits."""
    if x.dtype.itemsize < 8:
        return x.astype(np.float64)  # exact
    low = x & x.dtype.type(0xFFFFFFFF)
    high = x - low  # a multiple of 2**32: both halves convert exactly
    return _add_round_to_odd(high.astype(np.float64), low.astype(np.float64))


_FP16_TO_FP32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


# fp16 -> fp32 through the CPU's conversion instruction, which quiets signalling NaNs; their bits are
# rebuilt from the input's (sign, all-ones exponent, mantissa shifted up 13) as an exact widening gives.
_FP16_WIDENING_BODY = """  %converted = fpext half %x to float
  %bits = bitcast half %x to i16
  %wide_bits = zext i16 %bits to i32
  %sign = and i32 %wide_bits, 32768
  %sign32 = shl i32 %sign, 16
  %mantissa = and i32 %wide_bits, 1023
  %mantissa32 = shl i32 %mantissa, 13
  %nan_high = or i32 %sign32, 2139095040
  %nan_bits = or i32 %nan_high, %mantissa32
  %nan = bitcast i32 %nan_bits to float
  %is_nan = fcmp uno half %x, %x
  %wide = select i1 %is_nan, float %nan, float %converted"""
_WIDENING = native_loops.CompiledMaps(
    lambda: native_loops.map_loop("fp16_to_fp32", "half", "float", _FP16_WIDENING_BODY, "%wide"), ["fp16_to_fp32"])


def widen_to_fp32(x: np.ndarray) -> np.ndarray:
    """fp16 or bf16 -> fp32, exactly; faster than numpy's conversion (the CPU's conversion
    instructions in a compiled loop, else a table; a shift for bf16)."""
    if x.dtype == np.float16:
        source = np.ascontiguousarray(x)
        loop = _WIDENING.get("fp16_to_fp32")
        if loop is None:
            return np.take(_FP16_TO_FP32, source.view(np.uint16))
        out = np.empty(source.shape, dtype=np.float32)
        loop(source.ctypes.data, out.ctypes.data, source.size)
        return out
    if x.dtype.itemsize == 2 and x.dtype.type.__module__.startswith("ml_dtypes") and x.dtype.name == "bfloat16":
        return (np.ascontiguousarray(x).view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def cast(x: np.ndarray, src: T.dtype, dst: T.dtype, rounding: str | None = None) -> np.ndarray:
    if src.is_fp8e4b15() and not dst.is_fp8e4b15():  # codes: their exact values first
        return cast(fp8e4b15.decode(x), T.float32, dst, rounding)
    if dst.is_fp8e4b15():
        return fp8e4b15.encode(x, nan_keeps_sign=src.is_fp16())
    target = dst.numpy
    if dst.is_bool():
        return x != 0
    if src.is_floating() and dst.is_int():
        info = np.iinfo(target)
        wide = np.trunc(x.astype(np.float64))
        above = wide >= 2.0 ** (info.bits - (1 if info.min < 0 else 0))
        below = wide < float(info.min)
        invalid = np.isnan(wide) | above | below
        result = np.where(invalid, 0.0, wide).astype(target)
        result = np.where(above, info.max, result).astype(target)
        return np.where(below, info.min, result).astype(target)
    if src.is_floating() and dst.is_floating():
        if dst.name == "fp32" and src.primitive_bitwidth == 16:
            return widen_to_fp32(x)
        if dst.primitive_bitwidth >= src.primitive_bitwidth and not dst.is_fp8():
            return x.astype(target)
        source = _saturate_fp8(x, dst) if dst.is_fp8() else x
        rounded = narrow_float(source, target)
        if rounding == "rtz":
            rounded = _round_toward_zero(source, rounded)
        return rounded
    if src.is_int() and dst.is_floating():
        if dst.is_bf16():
            return narrow_float(_int_to_fp64_round_to_odd(x), target)
        if dst.is_fp8():
            return narrow_float(_saturate_fp8(_int_to_fp64_round_to_odd(x), dst), target)
        return x.astype(target)
    return x.astype(target)


# integer division ---------------------------------------------------------------------------
def int_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's truncating division; dividing by zero gives all ones (-1, or the unsigned maximum)."""
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    q = np.floor_divide(a, safe)
    if np.issubdtype(a.dtype, np.signedinteger):
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)  # floor -> toward zero
    return np.where(zero, np.array(-1).astype(q.dtype), q)


def int_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's remainder (the sign of the dividend); ``x % 0`` gives ``x``."""
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    r = np.fmod(a, safe)
    return np.where(zero, a, r)


def umulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    if bits == 32:
        wide = np.uint64 if a.dtype.kind == "u" else np.int64
        return ((a.astype(wide) * b.astype(wide)) >> 32).astype(a.dtype)
    # 64-bit: split into 32-bit halves (unsigned), then correct for signed operands
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    a_lo, a_hi = ua & mask, ua >> np.uint64(32)
    b_lo, b_hi = ub & mask, ub >> np.uint64(32)
    lo_lo = a_lo * b_lo
    mid1 = a_hi * b_lo + (lo_lo >> np.uint64(32))
    mid2 = a_lo * b_hi + (mid1 & mask)
    high = a_hi * b_hi + (mid1 >> np.uint64(32)) + (mid2 >> np.uint64(32))
    if a.dtype.kind == "i":
        high = high - np.where(a < 0, ub, 0).astype(np.uint64) - np.where(b < 0, ua, 0).astype(np.uint64)
    return high.astype(a.dtype)


# atomics ------------------------------------------------------------------------------------------
def _unsigned_view(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.dtype(f"uint{x.dtype.itemsize * 8}"))


def bits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equality of bit patterns, as atom.cas compares: -0 is not +0, a NaN equals the same NaN."""
    if a.dtype.kind in "biu":
        return a == b
    return _unsigned_view(a) == _unsigned_view(np.asarray(b, dtype=a.dtype))


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers that order floats as IEEE 754's totalOrder does: -NaN < -inf < ... < -0 < +0 <
    ... < +inf < +NaN, NaNs by payload. A float's bits are sign and magnitude; a negative one maps to
    -1 - magnitude."""
    bits = _unsigned_view(x)
    width = x.dtype.itemsize * 8
    signed = np.dtype(f"int{width}")
    magnitude = (bits & bits.dtype.type((1 << (width - 1)) - 1)).astype(signed)
    return np.where((bits >> bits.dtype.type(width - 1)) != 0, -magnitude - signed.type(1), magnitude)


def atomic_extremum(current: np.ndarray, update: np.ndarray, maximum: bool) -> np.ndarray:
    """What ``tl.atomic_max``/``tl.atomic_min`` leave in memory. Integers: by value. Floats: by IEEE
    totalOrder, as Triton lowers them on an NVIDIA GPU: a value whose sign bit is clear does a signed
    integer max (min) on the bits, one whose sign bit is set an unsigned min (max); so -0 < +0 and a
    NaN is not ignored (a positive NaN wins a max, a negative one a min). Measured on an H200."""
    if current.dtype.kind in "biu":
        return np.maximum(current, update) if maximum else np.minimum(current, update)
    update = np.asarray(update, dtype=current.dtype)
    own, other = _total_order_key(current), _total_order_key(update)
    return np.where(other > own if maximum else other < own, update, current)


# math -------------------------------------------------------------------------------------------
def _exact_erf(x: np.ndarray) -> np.ndarray:
    return libm.apply("erf", x.astype(np.float64, copy=False))


# Each math opcode of the IR spec: its numpy evaluation (in fp64), and the C math library's function
# of the same name where fp32 and fp64 arguments are evaluated by it instead (in compiled loops: fp64,
# rounded once for fp32), or None.
MATH_FUNCTIONS = {
    "exp": (np.exp, "exp"),
    "exp2": (np.exp2, "exp2"),
    "log": (np.log, "log"),
    "log2": (np.log2, "log2"),
    "cos": (np.cos, "cos"),
    "sin": (np.sin, "sin"),
    "sqrt": (np.sqrt, None),
    "sqrt_rn": (np.sqrt, None),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), None),
    "erf": (_exact_erf, "erf"),
    "floor": (np.floor, None),
    "ceil": (np.ceil, None),
}


def math_function(name: str, x: np.ndarray) -> np.ndarray:
    """fp32 (and narrower) arguments are evaluated in fp64 and rounded once. (The interpreter uses
    this only where the CPU backend's compiled math is not available:
    backends/interpreter/math_functions.py.)"""
    fn, libm_name = MATH_FUNCTIONS[name]
    if libm_name is not None and x.dtype in (np.float32, np.float64):
        return libm.apply(libm_name, x)  # evaluated in fp64, rounded once, in compiled code
    if x.dtype == np.float64:
        return fn(x).astype(np.float64)
    return fn(x.astype(np.float64)).astype(x.dtype)


def _two_sum(a: np.ndarray, b: np.ndarray):
    """s + e == a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: np.ndarray, b: np.ndarray):
    """p + e == a * b exactly, p = fl(a * b) (Veltkamp splitting, Dekker)."""
    def split(x):
        t = 134217729.0 * x  # 2**27 + 1
        hi = t - (t - x)
        return hi, x - hi

    p = a * b
    (ah, al), (bh, bl) = split(a), split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _add_round_to_odd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in fp64 rounded to odd: when inexact, the neighbour whose last bit is 1."""
    s, e = _two_sum(a, b)
    even = (np.ascontiguousarray(s).view(np.uint64) & np.uint64(1)) == 0
    step = (e != 0) & even & np.isfinite(s)
    return np.where(step, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


# the fp64 significand bits fp32 lacks (all in fp64's low 32-bit word), and fp32's smallest normal value
_FP32_DROPPED_BITS, _FP32_SMALLEST_NORMAL = 29, 2.0 ** -126


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once, as the GPU's fma.rn does."""
    with np.errstate(all="ignore"):
        if a.dtype == np.float64:
            # Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
            # using rounding to odd" (IEEE TC 2008); a*b + c where the error terms overflow.
            uh, ul = _two_product(a, b)
            th, tl = _two_sum(c, uh)
            out = th + _add_round_to_odd(tl, ul)
            return np.where(np.isfinite(ul) & np.isfinite(tl), out, a * b + c)
        # The product of two narrower floats is exact in fp64. Its sum with c rounded to fp64 then
        # rounds to the narrower type as the exact sum would, except where that fp64 sum is exactly
        # halfway between two of the type's values (a value fp64 represents, which rounding to
        # nearest never crosses): there the exact sum's side of it decides, which a sum rounded to
        # odd keeps. Such ties (the bits fp64 has beyond the type's significand are 10...0; where
        # the result is subnormal in the type, or nearly, more bits go, so all of those) are rare,
        # and only they take the slower path.
        exact_product = np.multiply(a, b, dtype=np.float64)
        if a.dtype != np.float32 or sys.byteorder != "little":  # (fp16, bf16, fp8: rounded to odd throughout)
            return _add_round_to_odd(exact_product, np.asarray(c, np.float64)).astype(a.dtype)
        dropped, smallest_normal = _FP32_DROPPED_BITS, _FP32_SMALLEST_NORMAL
        total = np.add(exact_product, c, dtype=np.float64)
        out = np.asarray(total.astype(a.dtype))
        # the dropped bits lie in the low 32-bit word of each fp64 (little-endian: the first)
        low_words = np.ascontiguousarray(total).reshape(-1).view(np.uint32)[0::2]
        tie = np.bitwise_and(low_words, np.uint32((1 << dropped) - 1)) == np.uint32(1 << (dropped - 1))
        tie = tie.reshape(out.shape) | (np.abs(out) < 2 * smallest_normal)
        if tie.any():
            out = out.copy()
            exact_product = np.broadcast_to(exact_product, tie.shape)[tie]
            addend = np.broadcast_to(np.asarray(c, np.float64), tie.shape)[tie]
            out[tie] = _add_round_to_odd(exact_product, addend).astype(a.dtype)
        return out


# dot ---------------------------------------------------------------------------------------------
def truncate_to_tf32(x: np.ndarray) -> np.ndarray:
    """Drops the low 13 mantissa bits, as an H200's tensor cores were measured to do."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


def dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, precision: str, out: np.dtype) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        return (np.matmul(a.astype(np.int64), b.astype(np.int64)) + acc).astype(out)
    if precision == "tf32":
        # Products of tf32 values (11 significant bits) are exact in fp32; the sums accumulate in
        # fp32 as the tensor cores' do.
        product = np.matmul(truncate_to_tf32(a), truncate_to_tf32(b))
        return (product + acc.astype(np.float32, copy=False)).astype(out, copy=False)
    elif precision == "tf32x3":
        a_big, b_big = truncate_to_tf32(a), truncate_to_tf32(b)
        a_small = truncate_to_tf32(a.astype(np.float32) - a_big)
        b_small = truncate_to_tf32(b.astype(np.float32) - b_big)
        product = sum(np.matmul(x.astype(np.float64), y.astype(np.float64))
                      for x, y in ((a_big, b_big), (a_big, b_small), (a_small, b_big)))
    elif a.dtype != np.float32 and a.dtype != np.float64 and out != np.float64:
        # fp16/bf16/fp8 inputs: exact products in fp32, fp32 accumulation, as on the tensor cores
        product = np.matmul(widen_to_fp32(a), widen_to_fp32(b))
        return (product + acc.astype(np.float32, copy=False)).astype(out, copy=False)
    else:
        product = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return (product + acc.astype(np.float64)).astype(out)


# reductions -------------------------------------------------------------------------------------
def _along(x: np.ndarray, axis: int, index) -> np.ndarray:
    """``x`` indexed along one axis (a view for slices)."""
    return x[(slice(None),) * axis + (index,)]


def tree_reduce(values: list[np.ndarray], axis: int, combine) -> list[np.ndarray]:
    """Combines halves pairwise until one element is left along ``axis`` (which is removed)."""
    n = values[0].shape[axis]
    while n > 1:
        if n % 2:
            # odd length: fold the last element into the first, then halve the rest
            last = [_along(v, axis, slice(n - 1, n)) for v in values]
            head = [_along(v, axis, slice(0, 1)) for v in values]
            merged = combine(head, last)
            values = [np.concatenate([m, _along(v, axis, slice(1, n - 1))], axis=axis)
                      for m, v in zip(merged, values)]
            n -= 1
            continue
        half = n // 2
        left = [_along(v, axis, slice(0, half)) for v in values]
        right = [_along(v, axis, slice(half, n)) for v in values]
        values = combine(left, right)
        n = half
    return [_along(v, axis, 0) for v in values]


def sum_tree(x: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    while n > 1 and n % 2 == 0:
        half = n // 2
        x = np.add(_along(x, axis, slice(0, half)), _along(x, axis, slice(half, n)), dtype=x.dtype)
        n = half
    return np.sum(x, axis=axis, dtype=x.dtype) if n > 1 else _along(x, axis, 0).copy()


# random numbers ----------------------------------------------------------------------------------
# Philox-4xW (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
# round multipliers and key increments (the Weyl sequence) for W = 32 and W = 64.
_PHILOX_CONSTANTS = {
    32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
    64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B),
}


def _mul_hi_lo(a: int, x: np.ndarray):
    """(high, low) words of the double-width product of the constant ``a`` and ``x``."""
    if x.dtype == np.uint32:
        wide = x.astype(np.uint64) * np.uint64(a)
        return (wide >> np.uint64(32)).astype(np.uint32), wide.astype(np.uint32)
    a_array = np.full(x.shape, a, dtype=np.uint64)
    return umulhi(a_array, x), a_array * x


def philox(c0, c1, c2, c3, k0, k1, n_rounds: int) -> list[np.ndarray]:
    """``n_rounds`` Philox rounds on the counter (c0, c1, c2, c3) with key (k0, k1), elementwise.

    Each round: (c0, c1, c2, c3) <- (hi(B*c2) ^ c1 ^ k0, lo(B*c2), hi(A*c0) ^ c3 ^ k1, lo(A*c0)),
    then the key is bumped by the Weyl constants; the order Triton's philox_impl uses.
    """
    bits = c0.dtype.itemsize * 8
    mul_a, mul_b, key_a, key_b = _PHILOX_CONSTANTS[bits]
    dt = c0.dtype.type
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    for _ in range(n_rounds):
        hi_b, lo_b = _mul_hi_lo(mul_b, c2)
        hi_a, lo_a = _mul_hi_lo(mul_a, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = k0 + dt(key_a)
        k1 = k1 + dt(key_b)
    return [np.asarray(c, dtype=c0.dtype) for c in (c0, c1, c2, c3)]


# sorting --------------------------------------------------------------------------------------------
def bitonic_sort(x: np.ndarray, descending: bool) -> np.ndarray:
    """Sorts along the last axis (a power of two) with the compare-and-swap network tl.sort runs.

    Stage s merges runs of 2**s, ascending where bit s of the position is 0 and descending where
    it is 1 (the last stage in the requested order). Each step pairs the positions that differ in
    one bit; a lane takes its partner's value when ``(own > partner) != (descending ^ is_right)``,
    Triton's rule (``_compare_and_swap`` in triton/language/standard.py). Each lane decides alone, so a
    pair that compares false both ways (a NaN, or -0.0 beside +0.0) is not swapped but merged: the
    right lane takes the left one's value, and the result need not be a permutation of the input
    (``[nan, 1, 3, 2, 0, 5, 4, 7]`` sorts to eight NaNs). Triton 3.6 on an H200 gives these results
    bit for bit (tests/execution/test_sort_network.py holds rows recorded there).
    """
    n = x.shape[-1]
    stages = n.bit_length() - 1
    position = np.arange(n)
    for stage in range(1, stages + 1):
        if stage == stages:
            desc = np.full(n, bool(descending))
        else:
            desc = ((position >> stage) & 1).astype(bool)
        for step in range(stage - 1, -1, -1):
            bit = 1 << step
            partner = x[..., position ^ bit]
            is_right = (position & bit) != 0
            x = np.where((x > partner) != (desc ^ is_right), partner, x)
    return x
