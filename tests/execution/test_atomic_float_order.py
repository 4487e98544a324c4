"""Float ``tl.atomic_max``/``tl.atomic_min`` and ``tl.atomic_cas`` on the special values, against
what an NVIDIA GPU does and an independent statement of it.

Triton lowers a float atomic max to integer atomics on the bits (signed max where the value's sign
bit is clear, unsigned min where it is set; min the mirror image), so the result is the larger
(smaller) in IEEE 754's totalOrder: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, NaNs ordered
by payload; a NaN is not ignored. ``atom.cas`` compares bits. The oracle here states totalOrder
with Python integers from ``struct``; the table rows were recorded with Triton 3.6 on an H200, which
matched that oracle on all 144 pairs of 12 special values, for fp32 and fp64 alike.
Tolerance: none, bits compared.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

SPECIAL_FP32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                0x7F800001, 0x7FC00001, 0x40000000, 0xC0000000]
SPECIAL_FP64 = [0x0, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x7FF0000000000000,
                0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                0x7FF8000000000001, 0x4000000000000000, 0xC000000000000000]

# (memory, value, memory after atomic_max, memory after atomic_min): fp32 bits, as the H200 left them
GPU_FP32 = [
    (0x00000000, 0x80000000, 0x00000000, 0x80000000),
    (0x80000000, 0x00000000, 0x00000000, 0x80000000),
    (0x3F800000, 0x7FC00000, 0x7FC00000, 0x3F800000),
    (0x3F800000, 0xFFC00000, 0x3F800000, 0xFFC00000),
    (0xBF800000, 0xFFC00000, 0xBF800000, 0xFFC00000),
    (0x7F800000, 0x7FC00000, 0x7FC00000, 0x7F800000),
    (0xFF800000, 0xFFC00000, 0xFF800000, 0xFFC00000),
    (0x7FC00000, 0x3F800000, 0x7FC00000, 0x3F800000),
    (0x7FC00000, 0xFFC00000, 0x7FC00000, 0xFFC00000),
    (0x7FC00000, 0x7FC00001, 0x7FC00001, 0x7FC00000),
    (0xFFC00000, 0x3F800000, 0x3F800000, 0xFFC00000),
    (0xFFC00000, 0xBF800000, 0xBF800000, 0xFFC00000),
    (0x7F800001, 0x7FC00000, 0x7FC00000, 0x7F800001),
]
# (memory, compare, memory after atomic_cas with value 42.0): fp32 bits, as the H200 left them
GPU_CAS_FP32 = [
    (0x00000000, 0x80000000, 0x00000000),
    (0x80000000, 0x00000000, 0x80000000),
    (0x3F800000, 0x3F800000, 0x42280000),
    (0x7FC00000, 0x7FC00000, 0x42280000),
    (0x7FC00000, 0x7FC00001, 0x7FC00000),
    (0xFFC00000, 0x7FC00000, 0xFFC00000),
]


def total_order_key(bits: int, width: int) -> int:
    """IEEE totalOrder as an integer: the bits read as sign and magnitude."""
    magnitude = bits & ((1 << (width - 1)) - 1)
    return -magnitude - 1 if bits >> (width - 1) else magnitude


def spec_atomic(memory: int, value: int, width: int, maximum: bool) -> int:
    key_memory, key_value = total_order_key(memory, width), total_order_key(value, width)
    wins = key_value > key_memory if maximum else key_value < key_memory
    return value if wins else memory


@triton.jit
def _rmw(x_ptr, value_ptr, old_ptr, MAXIMUM: tl.constexpr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    value = tl.load(value_ptr + lanes)
    if MAXIMUM:
        old = tl.atomic_max(x_ptr + lanes, value)
    else:
        old = tl.atomic_min(x_ptr + lanes, value)
    tl.store(old_ptr + lanes, old)


@triton.jit
def _cas(x_ptr, compare_ptr, old_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    old = tl.atomic_cas(x_ptr + lanes, tl.load(compare_ptr + lanes), tl.full((N,), 42.0, x_ptr.dtype.element_ty))
    tl.store(old_ptr + lanes, old)


def _pairs(specials: list[int], unsigned) -> tuple[np.ndarray, np.ndarray]:
    """Every (memory, value) pair of the specials, padded to 256 lanes with (0, 0)."""
    memory, value = np.zeros(256, unsigned), np.zeros(256, unsigned)
    grid = [(m, v) for m in specials for v in specials]
    memory[:len(grid)] = [m for m, _ in grid]
    value[:len(grid)] = [v for _, v in grid]
    return memory, value


@pytest.mark.parametrize("maximum", [True, False])
@pytest.mark.parametrize("float_type,unsigned,specials", [(np.float32, np.uint32, SPECIAL_FP32),
                                                          (np.float64, np.uint64, SPECIAL_FP64)])
def test_float_atomic_max_min_follow_total_order(float_type, unsigned, specials, maximum):
    memory, value = _pairs(specials, unsigned)
    x = memory.copy().view(float_type)
    old = np.zeros(256, float_type)
    _rmw[(1,)](x, value.view(float_type), old, MAXIMUM=maximum, N=256)
    width = np.dtype(unsigned).itemsize * 8
    expected = [spec_atomic(int(m), int(v), width, maximum) for m, v in zip(memory, value)]
    assert x.view(unsigned).tolist() == expected
    assert old.view(unsigned).tolist() == memory.tolist()  # what was there before


@pytest.mark.parametrize("debug", [False, True])
def test_float_atomic_max_min_match_the_gpu(debug):
    memory = np.array([row[0] for row in GPU_FP32], np.uint32)
    value = np.array([row[1] for row in GPU_FP32], np.uint32)
    for maximum, column in ((True, 2), (False, 3)):
        x = memory.copy().view(np.float32)
        lanes = 16
        padded_x, padded_value = np.zeros(lanes, np.float32), np.zeros(lanes, np.float32)
        padded_x[:len(x)], padded_value[:len(x)] = x, value.view(np.float32)
        _rmw[(1,)](padded_x, padded_value, np.zeros(lanes, np.float32), MAXIMUM=maximum, N=lanes, debug=debug)
        assert padded_x[:len(x)].view(np.uint32).tolist() == [row[column] for row in GPU_FP32]


def test_fp16_atomic_max_follows_the_same_order():
    """Triton refuses fp16 atomic_max; tritium accepts it and orders its bits the same way."""
    specials = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0xFE00]
    memory, value = _pairs(specials, np.uint16)
    x = memory.copy().view(np.float16)
    _rmw[(1,)](x, value.view(np.float16), np.zeros(256, np.float16), MAXIMUM=True, N=256)
    assert x.view(np.uint16).tolist() == [spec_atomic(int(m), int(v), 16, True) for m, v in zip(memory, value)]


@pytest.mark.parametrize("debug", [False, True])
def test_atomic_cas_compares_bits(debug):
    memory = np.array([row[0] for row in GPU_CAS_FP32], np.uint32)
    compare = np.array([row[1] for row in GPU_CAS_FP32], np.uint32)
    x, old = np.zeros(8, np.float32), np.zeros(8, np.float32)
    x[:len(memory)] = memory.view(np.float32)
    padded_compare = np.full(8, 7.0, np.float32)  # lanes past the table: 0.0 != 7.0, nothing swapped
    padded_compare[:len(compare)] = compare.view(np.float32)
    _cas[(1,)](x, padded_compare, old, N=8, debug=debug)
    assert x[:len(memory)].view(np.uint32).tolist() == [row[2] for row in GPU_CAS_FP32]
    assert old[:len(memory)].view(np.uint32).tolist() == memory.tolist()
    assert struct.pack("<f", 42.0) == struct.pack("<I", GPU_CAS_FP32[2][2])  # the value stored where equal
