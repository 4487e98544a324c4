"""``tl.map_elementwise`` against numpy, on every backend: branches and loops on single elements,
several results, ``pack``, 2-D blocks and broadcasting, and the errors Triton's arguments allow."""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


@triton.jit
def _selu(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@triton.jit
def _selu_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(o_ptr + offs, tl.map_elementwise(_selu, tl.load(x_ptr + offs), 1.5))  # a 2-D block, a scalar


def test_a_branch_per_element_on_a_2d_block():
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32) * 3
    out = np.zeros_like(x)
    _selu_kernel[(1,)](x, out, M=8, N=16)
    wide = x.astype(np.float64)
    expected = np.where(wide > 0, wide, 1.5 * np.expm1(wide))
    assert np.array_equal(out[x > 0], x[x > 0])  # the branch taken copies x exactly
    # the other: exp within 4 ulp, then two fp32 roundings; e^x - 1 >= 0.15 in size here, so a few
    # ulp of e^x stay within 4e-6 of the result
    np.testing.assert_allclose(out, expected, rtol=4e-6, atol=0)


@triton.jit
def _collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps, n


@triton.jit
def _collatz_kernel(x_ptr, s_ptr, e_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    steps, end = tl.map_elementwise(_collatz_steps, tl.load(x_ptr + r))
    tl.store(s_ptr + r, steps)
    tl.store(e_ptr + r, end)


def _collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_a_loop_per_element_with_two_results():
    x = np.arange(1, 65, dtype=np.int32)
    steps, end = np.zeros_like(x), np.zeros_like(x)
    _collatz_kernel[(1,)](x, steps, end, N=64)
    assert steps.tolist() == [_collatz(int(n)) for n in x]  # each element loops its own number of times
    assert end.tolist() == [1] * 64


@triton.jit
def _divmod_pairs(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def _pack_kernel(a_ptr, b_ptr, q_ptr, r_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    q, r = tl.map_elementwise(_divmod_pairs, tl.load(a_ptr + offs), tl.load(b_ptr + offs), pack=2)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)


def test_pack_hands_the_function_consecutive_elements():
    g = np.random.default_rng(5)
    a = g.integers(-1000, 1000, 32).astype(np.int32)
    b = g.integers(1, 9, 32).astype(np.int32) * np.where(g.random(32) < 0.5, -1, 1).astype(np.int32)
    q, r = np.zeros_like(a), np.zeros_like(a)
    _pack_kernel[(1,)](a, b, q, r, N=32)
    assert np.array_equal(q, np.trunc(a / b).astype(np.int32))  # C division: toward zero
    assert np.array_equal(r, np.fmod(a, b))


@triton.jit
def _pair_order(a0, a1):
    return a1 * 10 + a0, a0 * 10 + a1, a0 * 0.5, a1 * 0.5  # two results, two elements each


@triton.jit
def _pair_kernel(a_ptr, o_ptr, f_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    o, f = tl.map_elementwise(_pair_order, tl.load(a_ptr + offs), pack=2)
    tl.static_assert(o.dtype == tl.int32 and f.dtype == tl.float32)
    tl.store(o_ptr + offs, o)
    tl.store(f_ptr + offs, f)


def test_pack_groups_results_by_result_then_element():
    a = np.arange(3, 11, dtype=np.int32)
    o, f = np.zeros(8, np.int32), np.zeros(8, np.float32)
    _pair_kernel[(1,)](a, o, f, N=8)
    # call k gets (a[2k], a[2k+1]) and returns (o[2k], o[2k+1], f[2k], f[2k+1])
    pairs = a.reshape(4, 2)
    assert o.reshape(4, 2).tolist() == [[hi * 10 + lo, lo * 10 + hi] for lo, hi in pairs.tolist()]
    assert np.array_equal(f, a * np.float32(0.5))


def _not_jit(x):
    return x


@triton.jit
def _bad_kernel(x_ptr, N: tl.constexpr, WHAT: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if WHAT == "plain":
        y = tl.map_elementwise(_not_jit, x)
    else:
        y = tl.map_elementwise(_selu, x, 1.0, pack=3)
    tl.store(x_ptr + offs, y)


@pytest.mark.parametrize("what, message", [("plain", "map_elementwise maps a @triton.jit function"),
                                           ("pack", "pack=3 does not divide the 8 elements")])
def test_misuse_is_a_compile_error_at_the_call(what, message):
    with pytest.raises(CompilationError, match=message) as info:
        _bad_kernel[(1,)](np.zeros(8, np.float32), N=8, WHAT=what)
    assert "tl.map_elementwise(" in str(info.value) and "^" in str(info.value)
