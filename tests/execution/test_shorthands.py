"""Triton 3.9's spelled-out functions against numpy: tl.add, tl.sub, tl.mul, tl.to_tensor,
tl.load_tensor_descriptor and tl.store_tensor_descriptor give what the operators and methods give."""
from __future__ import annotations

import numpy as np

import tritium as triton
import tritium.language as tl


@triton.jit
def _arith(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    y = tl.load(tl.add(y_ptr, r))  # a pointer plus offsets
    big = tl.to_tensor(3_000_000_000)  # past int32: uint32, as Triton types it
    tl.static_assert(big.dtype == tl.uint32)
    tl.store(o_ptr + r, tl.mul(tl.sub(x, y, sanitize_overflow=False), tl.add(x, 2)))
    tl.store(o_ptr + N + r, (big - 2_999_999_990).to(tl.int32) + r * 0)


def test_add_sub_mul_and_to_tensor():
    x = np.arange(-8, 8, dtype=np.int32) * 3
    y = np.arange(16, dtype=np.int32)
    out = np.zeros(32, np.int32)
    _arith[(1,)](x, y, out, N=16)
    assert np.array_equal(out[:16], (x - y) * (x + 2))
    assert np.array_equal(out[16:], np.full(16, 10, np.int32))


@triton.jit
def _descriptor_copy(src_ptr, dst_ptr, M: tl.constexpr, N: tl.constexpr):
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[8, 16])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[8, 16])
    block = tl.load_tensor_descriptor(src, [8, 16])
    tl.store_tensor_descriptor(dst, [0, 0], block * 2)


def test_tensor_descriptor_functions_load_and_store_a_block():
    src = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    dst = np.zeros_like(src)
    _descriptor_copy[(1,)](src, dst, M=16, N=32)
    expected = np.zeros_like(src)
    expected[:8, :16] = src[8:16, 16:32] * 2
    assert np.array_equal(dst, expected)


@triton.jit
def _or_rows(x_ptr, o_ptr, a_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + tl.arange(0, M), tl.reduce_or(x, 1))
    tl.store(a_ptr, tl.reduce_or(x, None))


def test_reduce_or_is_the_bitwise_or_along_an_axis():
    x = np.random.default_rng(4).integers(0, 2**31, (8, 16)).astype(np.int32)
    x &= np.random.default_rng(5).integers(0, 2**31, (8, 16)).astype(np.int32)  # rows that miss some bits
    out, every = np.zeros(8, np.int32), np.zeros(1, np.int32)
    _or_rows[(1,)](x, out, every, M=8, N=16)
    assert np.array_equal(out, np.bitwise_or.reduce(x, axis=1))
    assert every[0] == np.bitwise_or.reduce(x.reshape(-1))


@triton.jit
def _halvings(x_ptr, o_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    while tl.condition(x > 1, disable_licm=True):
        x = x // 2
        steps += 1
    tl.store(o_ptr + pid, steps)


def test_while_condition_is_the_loop_test():
    x = np.array([1, 2, 3, 1000, 65536, 7], np.int32)
    out = np.zeros_like(x)
    _halvings[(6,)](x, out)
    assert out.tolist() == [int(v).bit_length() - 1 for v in x]  # halvings until 1
