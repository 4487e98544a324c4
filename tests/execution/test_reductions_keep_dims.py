"""Reductions over every axis with keep_dims=True give a block of all-ones shape, as in Triton, and
indexing with None and ':' follows Triton's rule (a None at position i inserts a dimension there; ':'
leaves the block as it is, also past its last dimension), so Triton's test_reduce idiom
`Z[None, None, :]` on the scalar output pointer is a [1, 1] block of pointers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _reduce_all(x_ptr, z_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, IS_3D: tl.constexpr,
                OP: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    if IS_3D:
        x = tl.load(x_ptr + rm[:, None, None] * N * K + rn[None, :, None] * K + rk[None, None, :])
        z_ptrs = z_ptr[None, None, None, :]
        i_ptrs = i_ptr[None, None, None, :]
    else:
        x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
        z_ptrs = z_ptr[None, None, :]
        i_ptrs = i_ptr[None, None, :]
    if OP == "sum":
        z = tl.sum(x, axis=None, keep_dims=True)
    elif OP == "max":
        z = tl.max(x, axis=None, keep_dims=True)
    elif OP == "min":
        z = tl.min(x, axis=None, keep_dims=True)
    else:
        z, i = tl.max(x, axis=None, keep_dims=True, return_indices=True)
        tl.static_assert(i.shape == z.shape)
        tl.store(i_ptrs, i)
    tl.static_assert(z.shape == z_ptrs.shape)
    tl.store(z_ptrs, z)


@pytest.mark.parametrize("op", ["sum", "max", "min", "max-with-index"])
@pytest.mark.parametrize("shape", [(32, 32), (32, 2, 16)])
def test_reducing_every_axis_with_keep_dims_gives_an_all_ones_block(backend, op, shape):
    rng = np.random.default_rng(len(shape))
    x = rng.integers(-1000, 1000, shape).astype(np.float32)  # integers: the sum is exact in any order
    z, i = torch.full((1,), -1.0), torch.full((1,), -1, dtype=torch.int32)
    m, n = shape[:2]
    k = shape[2] if len(shape) == 3 else 1
    _reduce_all[(1,)](torch.from_numpy(x), z, i, M=m, N=n, K=k, IS_3D=len(shape) == 3, OP=op)
    expected = {"sum": np.sum, "max": np.max, "min": np.min, "max-with-index": np.max}[op](x, axis=None,
                                                                                          keepdims=True)
    assert expected.shape == (1,) * len(shape)
    assert z.item() == expected.item()
    if op == "max-with-index":
        assert x.reshape(-1)[i.item()] == x.max()


@triton.jit
def _indexed(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    a = x[None, :]  # [1, N]
    b = x[:, None]  # [N, 1]
    c = a[:, None, :]  # [1, 1, N]
    s = tl.sum(x, axis=0)[None, None]  # a scalar: [1, 1]
    tl.static_assert(a.shape == [1, N] and b.shape == [N, 1] and c.shape == [1, 1, N] and s.shape == [1, 1])
    tl.store(out_ptr + r[:, None] * N + r[None, :], a + b + tl.reshape(c, (1, N)) + s)


def test_none_and_colon_indexing_matches_numpy(backend):
    x = np.arange(8, dtype=np.float32) * 3
    out = torch.zeros(64)
    _indexed[(1,)](torch.from_numpy(x), out, N=8)
    a, b = x[None, :], x[:, None]
    np.testing.assert_array_equal(out.numpy().reshape(8, 8), a + b + a[:, None, :].reshape(1, 8) + x.sum())


@triton.jit
def _bad_index(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(x_ptr + tl.arange(0, 4)[:, None], x[:, :, None])


def test_a_new_dimension_past_the_end_is_a_compile_error_at_the_line(backend):
    with pytest.raises(triton.CompilationError, match="cannot insert a dimension at position 2") as info:
        _bad_index[(1,)](torch.zeros(4))
    assert "x[:, :, None]" in str(info.value) and "^" in str(info.value)
