"""libdevice's integer functions (brev, ffs, mulhi, mul24, hadd, rhadd, sad, byte_perm) against
Python integer arithmetic following CUDA's documentation of each: exact, on every backend."""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.language.extra import libdevice

RNG = np.random.default_rng(11)
N = 64


def _words(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:4] = [0, info.max, info.min, 1]
    return x


@triton.jit
def _unary(x_ptr, o_ptr, FN: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if FN == "brev":
        y = libdevice.brev(x)
    else:
        y = libdevice.ffs(x)
    tl.store(o_ptr + r, y)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_brev_and_ffs(dtype):
    bits = np.iinfo(dtype).bits
    x = _words(dtype)
    out = np.zeros_like(x)
    _unary[(1,)](x, out, FN="brev", N=N)
    mask = (1 << bits) - 1
    reversed_bits = [int(format(int(v) & mask, f"0{bits}b")[::-1], 2) for v in x]
    assert [int(v) & mask for v in out] == reversed_bits
    positions = np.zeros(N, np.int32)
    _unary[(1,)](x, positions, FN="ffs", N=N)
    assert positions.tolist() == [((int(v) & mask) & -(int(v) & mask)).bit_length() for v in x]


@triton.jit
def _binary(x_ptr, y_ptr, o_ptr, FN: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    if FN == "mulhi":
        z = libdevice.mulhi(x, y)
    elif FN == "mul24":
        z = libdevice.mul24(x, y)
    elif FN == "hadd":
        z = libdevice.hadd(x, y)
    else:
        z = libdevice.rhadd(x, y)
    tl.store(o_ptr + r, z)


def _wrap(v: int, dtype) -> int:
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.iinfo(dtype).min < 0 and v >= 1 << (bits - 1) else v


def _low24(v: int, signed: bool) -> int:
    v &= 0xFFFFFF
    return v - (1 << 24) if signed and v >= 1 << 23 else v


@pytest.mark.parametrize("fn, dtype", [("mulhi", np.int32), ("mulhi", np.uint32), ("mulhi", np.int64),
                                       ("mulhi", np.uint64), ("mul24", np.int32), ("mul24", np.uint32),
                                       ("hadd", np.int32), ("hadd", np.uint32), ("rhadd", np.int32),
                                       ("rhadd", np.uint32)])
def test_binary_integer_functions(fn, dtype):
    x, y = _words(dtype), _words(dtype)[::-1].copy()
    out = np.zeros_like(x)
    _binary[(1,)](x, y, out, FN=fn, N=N)
    bits, signed = np.iinfo(dtype).bits, np.iinfo(dtype).min < 0
    expected = {
        "mulhi": lambda a, b: (a * b) >> bits,  # Python's >> floors, as the signed high word does
        "mul24": lambda a, b: _wrap(_low24(a, signed) * _low24(b, signed), dtype),
        "hadd": lambda a, b: (a + b) >> 1,
        "rhadd": lambda a, b: (a + b + 1) >> 1,
    }[fn]
    assert [int(v) for v in out] == [_wrap(expected(int(a), int(b)), dtype) for a, b in zip(x, y)]


@triton.jit
def _ternary(x_ptr, y_ptr, z_ptr, o_ptr, FN: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    z = tl.load(z_ptr + r)
    if FN == "sad":
        w = libdevice.sad(x, y, z)
    else:
        w = libdevice.byte_perm(x, y, z)
    tl.store(o_ptr + r, w)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_sad(dtype):
    x, y, z = _words(dtype), _words(dtype)[::-1].copy(), _words(np.uint32)
    out = np.zeros_like(x)
    _ternary[(1,)](x, y, z, out, FN="sad", N=N)
    assert [int(v) for v in out] == [_wrap(abs(int(a) - int(b)) + int(c), dtype) for a, b, c in zip(x, y, z)]


def test_byte_perm():
    x, y, s = _words(np.int32), _words(np.int32)[::-1].copy(), _words(np.int32)
    out = np.zeros_like(x)
    _ternary[(1,)](x, y, s, out, FN="byte_perm", N=N)
    expected = []
    for a, b, sel in zip(x, y, s):
        source = ((int(b) & 0xFFFFFFFF) << 32) | (int(a) & 0xFFFFFFFF)
        word = 0
        for n in range(4):
            which = (int(sel) >> (4 * n)) & 7
            word |= ((source >> (8 * which)) & 0xFF) << (8 * n)
        expected.append(_wrap(word, np.int32))
    assert [int(v) for v in out] == expected
