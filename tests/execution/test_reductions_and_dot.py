"""Reductions, scans, tl.dot and shape operations, each against numpy/torch or an fp64 reference.

Tolerances: float sums are compared with an fp64 reference at rtol 1e-5 (a tree of fp32
additions over at most a few thousand terms); max/min/argmax/argmin, integer results and shape
operations are exact; tl.dot is checked against an fp64 product of exactly the inputs the
tensor cores see (tf32-truncated for the default precision) at rtol 1e-5.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


def _rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


# ------------------------------------------------------------------------------------------------
# sum / max / min along an axis, all axes, keep_dims
# ------------------------------------------------------------------------------------------------
@triton.jit
def _reduce_2d_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr,
                      AXIS: tl.constexpr, KEEP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    # store the result with its own shape, row-major
    if AXIS is None:
        if KEEP:
            tl.static_assert(len(r.shape) == 2)
            tl.static_assert(r.shape[0] == 1 and r.shape[1] == 1)
            tl.store(out_ptr + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], r)
        else:
            tl.static_assert(len(r.shape) == 0)
            tl.store(out_ptr, r)
    elif AXIS == 0:
        if KEEP:
            tl.static_assert(r.shape[0] == 1 and r.shape[1] == N)
            tl.store(out_ptr + tl.arange(0, 1)[:, None] * N + rn[None, :], r)
        else:
            tl.static_assert(len(r.shape) == 1 and r.shape[0] == N)
            tl.store(out_ptr + rn, r)
    else:
        if KEEP:
            tl.static_assert(r.shape[0] == M and r.shape[1] == 1)
            tl.store(out_ptr + rm[:, None] + tl.arange(0, 1)[None, :], r)
        else:
            tl.static_assert(len(r.shape) == 1 and r.shape[0] == M)
            tl.store(out_ptr + rm, r)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep", [False, True])
def test_sum_max_min_axes_and_keep_dims(op, axis, keep):
    m, n = 16, 32
    x = _rand(m, n, seed=1)
    size = {0: n, 1: m, None: 1}[axis]
    out = torch.full((size,), float("nan"))
    _reduce_2d_kernel[(1,)](x, out, M=m, N=n, OP=op, AXIS=axis, KEEP=keep)
    xd = x.double()
    if axis is None:
        ref = {"sum": xd.sum(), "max": xd.max(), "min": xd.min()}[op].reshape(1)
    else:
        ref = {"sum": xd.sum(axis), "max": xd.amax(axis), "min": xd.amin(axis)}[op]
    if op == "sum":
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)
    else:
        torch.testing.assert_close(out.double(), ref, rtol=0, atol=0)


@triton.jit
def _reduce_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)
    s = tl.sum(x, axis=1)  # (A, C)
    tl.store(out_ptr + tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :], s)


def test_sum_middle_axis_of_3d_block(backend):
    a, b, c = 4, 8, 16
    x = torch.randint(-50, 50, (a, b, c), dtype=torch.int32)
    out = torch.zeros(a, c, dtype=torch.int32)
    _reduce_3d_kernel[(1,)](x, out, A=a, B=b, C=c)
    assert torch.equal(out, x.sum(1, dtype=torch.int32))


# ------------------------------------------------------------------------------------------------
# rows of non-power-of-two length, padded and masked
# ------------------------------------------------------------------------------------------------
@triton.jit
def _row_stats_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    ptrs = x_ptr + row * stride + cols
    x_sum = tl.load(ptrs, mask=mask, other=0.0)
    x_max = tl.load(ptrs, mask=mask, other=float("-inf"))
    x_min = tl.load(ptrs, mask=mask, other=float("inf"))
    tl.store(sum_ptr + row, tl.sum(x_sum, axis=0))
    tl.store(max_ptr + row, tl.max(x_max, axis=0))
    tl.store(min_ptr + row, tl.min(x_min, axis=0))


@pytest.mark.parametrize("n_cols", [1, 3, 100, 781])
def test_masked_padded_rows_vs_torch(n_cols):
    rows = 7
    # all-negative rows make a wrong padding (0 instead of -inf) visible in max
    x = -torch.rand(rows, n_cols) * 10 - 1
    x[1] = -x[1]  # and one all-positive row for min
    block = triton.next_power_of_2(n_cols)
    s, mx, mn = torch.empty(rows), torch.empty(rows), torch.empty(rows)
    _row_stats_kernel[(rows,)](x, s, mx, mn, n_cols, x.stride(0), BLOCK=block)
    torch.testing.assert_close(s.double(), x.double().sum(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mx, x.amax(1), rtol=0, atol=0)
    torch.testing.assert_close(mn, x.amin(1), rtol=0, atol=0)


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def test_masked_row_softmax_vs_torch(backend):
    rows, n_cols = 9, 203
    x = _rand(rows, n_cols, seed=3) * 4
    out = torch.empty_like(x)
    _softmax_kernel[(rows,)](x, out, n_cols, x.stride(0), BLOCK=256)
    torch.testing.assert_close(out.double(), torch.softmax(x.double(), dim=1), rtol=1e-5, atol=1e-7)


@triton.jit
def _tl_softmax_kernel(x_ptr, out_ptr, NUMEL: tl.constexpr, SHAPE: tl.constexpr, DIM: tl.constexpr,
                       MEMBER: tl.constexpr, IEEE: tl.constexpr):
    offs = tl.reshape(tl.arange(0, NUMEL), SHAPE)
    x = tl.load(x_ptr + offs)
    if MEMBER:
        y = x.softmax(dim=DIM, ieee_rounding=IEEE)
    elif DIM is None:
        y = tl.softmax(x)
    else:
        y = tl.softmax(x, DIM, ieee_rounding=IEEE)
    tl.static_assert(len(y.shape) == len(SHAPE))
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("shape, dim", [((16,), None), ((4, 8), None), ((4, 8), 0), ((4, 8), 1), ((4, 8), -1),
                                        ((2, 4, 8), 1), ((2, 4, 8), -3)])
@pytest.mark.parametrize("member, ieee", [(False, False), (True, True)])
def test_tl_softmax_normalizes_along_dim_zero_by_default(shape, dim, member, ieee):
    x = _rand(*shape, seed=11) * 3
    out = torch.empty_like(x)
    _tl_softmax_kernel[(1,)](x, out, NUMEL=x.numel(), SHAPE=shape, DIM=dim, MEMBER=member, IEEE=ieee)
    expected = torch.softmax(x.double(), dim=0 if dim is None else dim)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-7)


@triton.jit
def _softmax_keep_dims_kernel(x_ptr, out_ptr, KEEP: tl.constexpr, POSITIONAL: tl.constexpr):
    offs = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]
    x = tl.load(x_ptr + offs)
    if POSITIONAL:
        y = tl.softmax(x, 1, KEEP)  # positional keep_dims
    else:
        y = tl.softmax(x, dim=1, keep_dims=KEEP)  # keyword keep_dims
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("keep", [None, False, True])
def test_softmax_keep_dims_is_ignored_and_warns_when_given(keep):
    x = _rand(4, 4, seed=12)
    out = torch.empty_like(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _softmax_keep_dims_kernel[(1,)](x, out, KEEP=keep, POSITIONAL=False)
    torch.testing.assert_close(out.double(), torch.softmax(x.double(), dim=1), rtol=1e-5, atol=1e-7)
    if keep is None:
        assert caught == []
        return
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert "keep_dims argument to tl.softmax is deprecated and ignored" in str(caught[0].message)
    lines, first = inspect.getsourcelines(_softmax_keep_dims_kernel.fn)
    marked = next(i for i, line in enumerate(lines) if "# keyword keep_dims" in line)
    assert (caught[0].filename, caught[0].lineno) == (__file__, first + marked)


def test_softmax_keep_dims_cannot_be_positional():
    x = _rand(4, 4, seed=13)
    with pytest.raises(CompilationError, match="positional argument"):
        _softmax_keep_dims_kernel[(1,)](x, torch.empty_like(x), KEEP=True, POSITIONAL=True)


@triton.jit
def _sum_int8_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    s = tl.sum(x, axis=0)
    tl.static_assert(s.dtype == tl.int32, "sum of int8 must be int32")
    c = tl.cumsum(x, axis=0)
    tl.static_assert(c.dtype == tl.int32, "cumsum of int8 must be int32")
    tl.store(out_ptr, s)
    tl.store(out_ptr + 1 + tl.arange(0, BLOCK), c)


def test_sum_of_int8_promotes_to_int32():
    block = 64
    x = torch.full((block,), 100, dtype=torch.int8)
    x[::3] = -128
    out = torch.zeros(block + 1, dtype=torch.int32)
    _sum_int8_kernel[(1,)](x, out, BLOCK=block)
    wide = x.to(torch.int64)
    assert out[0].item() == int(wide.sum())  # far outside int8's range, no wrap-around
    assert out[1:].tolist() == torch.cumsum(wide, 0).tolist()
    assert "i32" in _sum_int8_kernel.ir("*i8,*i32", BLOCK=block)


@triton.jit
def _sum_fp16_as_fp32_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.sum(x.to(tl.float32), axis=0))
    tl.store(out_ptr + 1, tl.sum(x, axis=0, dtype=tl.float32))


def test_sum_fp16_accumulated_in_fp32():
    block = 2048
    x = torch.full((block,), 1e-4, dtype=torch.float16)
    out = torch.zeros(2)
    _sum_fp16_as_fp32_kernel[(1,)](x, out, BLOCK=block)
    ref = float(x.double().sum())
    assert out[0].item() == pytest.approx(ref, rel=1e-5)
    assert out[1].item() == pytest.approx(ref, rel=1e-5)


# ------------------------------------------------------------------------------------------------
# argmax / argmin
# ------------------------------------------------------------------------------------------------
@triton.jit
def _arg_kernel(x_ptr, imax_ptr, imin_ptr, vmax_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    imax = tl.argmax(x, axis=AXIS)
    imin = tl.argmin(x, axis=AXIS)
    vmax, imax2 = tl.max(x, axis=AXIS, return_indices=True)
    if AXIS == 0:
        o = rn
    else:
        o = rm
    tl.store(imax_ptr + o, imax)
    tl.store(imin_ptr + o, imin)
    tl.store(vmax_ptr + o, vmax)
    tl.store(imax_ptr + tl.num_programs(0) * 0 + o + (N if AXIS == 0 else M), imax2)


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_argmin_ties_take_smallest_index(axis):
    m, n = 16, 32
    # small integers (as floats): many ties in every row and column
    x = torch.randint(0, 4, (m, n)).float()
    size = n if axis == 0 else m
    imax = torch.full((2 * size,), -1, dtype=torch.int32)
    imin = torch.full((size,), -1, dtype=torch.int32)
    vmax = torch.empty(size)
    _arg_kernel[(1,)](x, imax, imin, vmax, M=m, N=n, AXIS=axis)
    xs = x.numpy()
    # numpy's argmax/argmin return the first occurrence; checked by a plain loop too
    ref_max = np.argmax(xs, axis=axis)
    ref_min = np.argmin(xs, axis=axis)
    lines = xs.T if axis == 0 else xs
    assert list(ref_max) == [list(line).index(max(line)) for line in lines]
    assert imax[:size].tolist() == ref_max.tolist()
    assert imax[size:].tolist() == ref_max.tolist()
    assert imin.tolist() == ref_min.tolist()
    assert vmax.tolist() == xs.max(axis=axis).tolist()


@triton.jit
def _argmax_masked_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0))


def test_argmax_of_masked_rows():
    rows, n_cols = 6, 50
    x = -torch.rand(rows, n_cols) - 1  # padding with 0 would win; -inf must not
    x[2, 17] = 5.0
    x[3, 49] = 0.5
    out = torch.full((rows,), -1, dtype=torch.int32)
    _argmax_masked_kernel[(rows,)](x, out, n_cols, BLOCK=64)
    assert out.tolist() == torch.argmax(x, dim=1).tolist()


# ------------------------------------------------------------------------------------------------
# tl.reduce with a @jit combine function
# ------------------------------------------------------------------------------------------------
@triton.jit
def _combine_abs_max(a, b):
    return tl.where(tl.abs(a) > tl.abs(b), a, b)


@triton.jit
def _combine_argmin_tuple(v1, i1, v2, i2):
    take_left = (v1 < v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take_left, v1, v2), tl.where(take_left, i1, i2)


@triton.jit
def _combine_add_mul(a1, b1, a2, b2):
    return a1 + a2, b1 * b2


@triton.jit
def _custom_reduce_kernel(x_ptr, absmax_ptr, vmin_ptr, imin_ptr, sum_ptr, prod_ptr,
                          M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(absmax_ptr + rm, tl.reduce(x, 1, _combine_abs_max))
    idx = tl.broadcast_to(rn[None, :], (M, N))
    v, i = tl.reduce((x, idx), axis=1, combine_fn=_combine_argmin_tuple)
    tl.store(vmin_ptr + rm, v)
    tl.store(imin_ptr + rm, i)
    ints = (x * 0.0 + 1.0).to(tl.int32) + (rn[None, :] % 2)  # 1s and 2s
    s, p = tl.reduce((ints, ints), 0, _combine_add_mul)
    tl.store(sum_ptr + rn, s)
    tl.store(prod_ptr + rn, p)


def test_reduce_with_jit_combine_functions():
    m, n = 8, 16
    x = torch.randint(-6, 7, (m, n)).float()
    x[0] = torch.tensor([3.0, -5.0] + [1.0] * (n - 2))
    absmax = torch.empty(m)
    vmin = torch.empty(m)
    imin = torch.full((m,), -1, dtype=torch.int32)
    s = torch.zeros(n, dtype=torch.int32)
    p = torch.zeros(n, dtype=torch.int32)
    _custom_reduce_kernel[(1,)](x, absmax, vmin, imin, s, p, M=m, N=n)
    xs = x.numpy()
    # the abs-max of a row is unique up to sign; compare magnitude and that it is an element of the row
    assert np.array_equal(np.abs(absmax.numpy()), np.abs(xs).max(axis=1))
    assert all(absmax[r].item() in xs[r] for r in range(m))
    assert absmax[0].item() == -5.0
    assert vmin.tolist() == xs.min(axis=1).tolist()
    assert imin.tolist() == np.argmin(xs, axis=1).tolist()
    ints = 1 + (np.arange(n) % 2)
    assert s.tolist() == (ints * m).tolist()
    assert p.tolist() == (ints ** m).tolist()


@triton.jit
def _reduce_all_axes_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr, tl.reduce(x, None, _combine_abs_max))


def test_reduce_axis_none_with_combine():
    x = torch.randint(-100, 100, (4, 32)).float()
    x[2, 7] = -1000.0
    out = torch.zeros(1)
    _reduce_all_axes_kernel[(1,)](x, out, M=4, N=32)
    assert out.item() == -1000.0


# ------------------------------------------------------------------------------------------------
# cumsum / cumprod
# ------------------------------------------------------------------------------------------------
@triton.jit
def _scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr, AXIS: tl.constexpr,
                 REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    else:
        y = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_cumprod_axes_and_reverse(op, axis, reverse):
    m, n = 8, 16
    if op == "cumsum":
        x = torch.randint(-1000, 1000, (m, n), dtype=torch.int32)
    else:
        x = torch.randint(-3, 4, (m, n), dtype=torch.int32)
    out = torch.zeros_like(x)
    _scan_kernel[(1,)](x, out, M=m, N=n, OP=op, AXIS=axis, REVERSE=reverse)
    src = x.flip(axis) if reverse else x
    fn = torch.cumsum if op == "cumsum" else torch.cumprod
    ref = fn(src.to(torch.int64), dim=axis)
    ref = ref.flip(axis) if reverse else ref
    assert torch.equal(out, ref.to(torch.int32))  # int32 wrap-around matches a GPU's


def test_cumsum_float_vs_fp64(backend):
    m, n = 4, 128
    x = _rand(m, n, seed=5)
    out = torch.empty_like(x)
    _scan_kernel[(1,)](x, out, M=m, N=n, OP="cumsum", AXIS=1, REVERSE=False)
    torch.testing.assert_close(out.double(), torch.cumsum(x.double(), 1), rtol=1e-5, atol=1e-5)
    _scan_kernel[(1,)](x, out, M=m, N=n, OP="cumsum", AXIS=1, REVERSE=True)
    torch.testing.assert_close(out.double(), torch.cumsum(x.double().flip(1), 1).flip(1), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# tl.dot
# ------------------------------------------------------------------------------------------------
def _tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 values with the low 13 mantissa bits zeroed (what the tensor cores read)."""
    bits = t.contiguous().view(torch.int32) & ~0x1FFF
    return bits.view(torch.float32)


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if PRECISION == "default":
        c = tl.dot(a, b)
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    tl.static_assert(c.dtype == OUT_DTYPE)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def _assert_rel(actual: torch.Tensor, expected: torch.Tensor, rtol: float):
    """|actual - expected| <= rtol * max|expected| (a norm-wise relative bound for a matmul)."""
    err = (actual.double() - expected.double()).abs().max().item()
    scale = expected.double().abs().max().item()
    assert err <= rtol * scale, f"max error {err:.3e} exceeds {rtol} * {scale:.3e}"


def test_dot_fp32_default_is_tf32():
    m, n, k = 32, 16, 64
    a, b = _rand(m, k, seed=10), _rand(k, n, seed=11)
    c = torch.empty(m, n)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="default", OUT_DTYPE=tl.float32)
    tf32_ref = _tf32(a).double() @ _tf32(b).double()
    _assert_rel(c, tf32_ref, 1e-5)
    # the test can tell tf32 from full precision: the untruncated product differs by 10x the tolerance
    full_ref = a.double() @ b.double()
    assert (tf32_ref - full_ref).abs().max().item() > 10 * 1e-5 * tf32_ref.abs().max().item()


def test_dot_explicit_tf32_equals_default():
    m = n = k = 16
    a, b = _rand(m, k, seed=12), _rand(k, n, seed=13)
    c1, c2 = torch.empty(m, n), torch.empty(m, n)
    _dot_kernel[(1,)](a, b, c1, M=m, N=n, K=k, PRECISION="default", OUT_DTYPE=tl.float32)
    _dot_kernel[(1,)](a, b, c2, M=m, N=n, K=k, PRECISION="tf32", OUT_DTYPE=tl.float32)
    assert torch.equal(c1, c2)


def test_dot_ieee_matches_fp64(backend):
    m, n, k = 16, 32, 128
    a, b = _rand(m, k, seed=14), _rand(k, n, seed=15)
    c = torch.empty(m, n)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="ieee", OUT_DTYPE=tl.float32)
    ref = a.double() @ b.double()
    _assert_rel(c, ref, 1e-5)
    # and it is measurably more accurate than tf32 would be
    tf32_err = (_tf32(a).double() @ _tf32(b).double() - ref).abs().max().item()
    ieee_err = (c.double() - ref).abs().max().item()
    assert ieee_err < tf32_err / 10


def test_dot_fp16_inputs_accumulate_in_fp32():
    m, n, k = 16, 16, 256
    a = (torch.rand(m, k) + 0.5).half()
    b = (torch.rand(k, n) + 0.5).half()
    c = torch.empty(m, n)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="default", OUT_DTYPE=tl.float32)
    ref = a.double() @ b.double()  # fp16 values are exact in fp64, products exact
    _assert_rel(c, ref, 1e-5)
    # an fp16 accumulator could not get this close (its ulp at ~256 is 0.25)
    assert (c.double() - ref).abs().max().item() < 0.01


def test_dot_bf16_inputs():
    m, n, k = 16, 16, 64
    a, b = _rand(m, k, seed=16).bfloat16(), _rand(k, n, seed=17).bfloat16()
    c = torch.empty(m, n)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="default", OUT_DTYPE=tl.float32)
    _assert_rel(c, a.double() @ b.double(), 1e-5)


def test_dot_int8_to_int32_exact():
    m, n, k = 32, 16, 64
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    a[0, :] = -128
    b[:, 0] = -128  # c[0, 0] = 64 * 16384, beyond int16
    c = torch.zeros(m, n, dtype=torch.int32)
    _dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="default", OUT_DTYPE=tl.int32)
    ref = a.to(torch.int64) @ b.to(torch.int64)
    assert torch.equal(c.to(torch.int64), ref)
    assert c[0, 0].item() == 64 * 128 * 128


@triton.jit
def _dot_acc_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    USE_ACC_KW: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c0 = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    if USE_ACC_KW:
        c = tl.dot(a, b, acc=c0, input_precision="ieee")
    else:
        c = tl.dot(a, b, c0, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("keyword", [True, False])
def test_dot_acc_argument(keyword):
    m, n, k = 16, 16, 32
    a, b = _rand(m, k, seed=20), _rand(k, n, seed=21)
    c0 = _rand(m, n, seed=22) * 100
    c = c0.clone()
    _dot_acc_kernel[(1,)](a, b, c, M=m, N=n, K=k, USE_ACC_KW=keyword)
    _assert_rel(c, c0.double() + a.double() @ b.double(), 1e-5)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (50, 70, 90), (17, 33, 129)])
@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_tiled_matmul_vs_torch(m, n, k, precision):
    a, b = _rand(m, k, seed=30), _rand(k, n, seed=31)
    c = torch.full((m, n), float("nan"))
    bm, bn, bk = 32, 32, 32
    _matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION=precision)
    if precision == "ieee":
        ref = torch.matmul(a.double(), b.double())
        torch.testing.assert_close(c, torch.matmul(a, b), rtol=1e-4, atol=1e-4)
    else:
        ref = torch.matmul(_tf32(a).double(), _tf32(b).double())
    _assert_rel(c, ref, 1e-5)


def test_tiled_matmul_transposed_operand_and_fp16_output():
    m, n, k = 48, 40, 72
    a = _rand(k, m, seed=32).half().t()  # non-contiguous: strides (1, m)
    b = _rand(k, n, seed=33).half()
    c = torch.empty(m, n, dtype=torch.float16)
    _matmul_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 32))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, PRECISION="ieee")
    ref = (a.double() @ b.double()).half()  # one rounding of the fp32-accurate result
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)


@triton.jit
def _small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8])
@pytest.mark.parametrize("m,n,k", [(64, 64, 4), (16, 8, 1), (2, 16, 2)])
def test_dot_with_small_k_matches_numpy_on_the_host_backends(backend, dtype, m, n, k):
    """Triton's interpreter takes any K (test_core's small-M/N cases include K=4); so do the host
    backends. Small integers: every product and sum is exact, whatever the precision."""
    rng = np.random.default_rng(k)
    a_np, b_np = rng.integers(-4, 5, (m, k)), rng.integers(-4, 5, (k, n))
    a, b = torch.from_numpy(a_np).to(dtype), torch.from_numpy(b_np).to(dtype)
    c = torch.zeros(m, n, dtype=torch.int32 if dtype == torch.int8 else torch.float32)
    _small_dot_kernel[(1,)](a, b, c, M=m, N=n, K=k)
    np.testing.assert_array_equal(c.numpy().astype(np.float64), a_np.astype(np.float64) @ b_np)


@pytest.mark.parametrize("dtype,k,minimum", [(torch.float16, 8, 16), (torch.float32, 8, 16), (torch.int8, 16, 32)])
def test_dot_with_short_k_is_tritons_compile_error_in_strict_mode(backend, monkeypatch, dtype, k, minimum):
    monkeypatch.setenv("TRITIUM_STRICT", "1")
    a, b, c = torch.zeros(16, k, dtype=dtype), torch.zeros(k, 16, dtype=dtype), torch.zeros(16, 16)
    with pytest.raises(triton.CompilationError, match=f"Input shapes should have M >= 1, N >= 1 and K >= {minimum}") \
            as info:
        _small_dot_kernel[(1,)](a, b, c, M=16, N=16, K=k)
    assert "tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))" in str(info.value)
    assert "^" in str(info.value)


@pytest.mark.parametrize("m,n,k", [(1, 16, 8), (8, 4, 16), (2, 2, 8)])
def test_dot_with_small_m_and_n_matches_numpy(m, n, k):
    # small M and N are padded for the tensor cores on a GPU; the result is the plain product
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.integers(-4, 5, (m, k)).astype(np.float32))
    b = torch.from_numpy(rng.integers(-4, 5, (k, n)).astype(np.float32))
    c = torch.zeros(m, n)
    _small_dot_kernel[(1,)](a, b, c, M=m, N=n, K=k)
    np.testing.assert_array_equal(c.numpy(), a.numpy() @ b.numpy())  # small integers: exact in tf32


# ------------------------------------------------------------------------------------------------
# shape operations
# ------------------------------------------------------------------------------------------------
@triton.jit
def _trans_kernel(x_ptr, t_ptr, t2_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    t = tl.trans(x)  # (N, M)
    tl.store(t_ptr + rn[:, None] * M + rm[None, :], t)
    t2 = x.T
    tl.store(t2_ptr + rn[:, None] * M + rm[None, :], t2)


def test_trans():
    m, n = 8, 32
    x = torch.arange(m * n, dtype=torch.float32).reshape(m, n)
    t, t2 = torch.empty(n, m), torch.empty(n, m)
    _trans_kernel[(1,)](x, t, t2, M=m, N=n)
    assert torch.equal(t, x.t())
    assert torch.equal(t2, x.t())


@triton.jit
def _permute_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                    D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr):
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)
    y = tl.permute(x, (D0, D1, D2))
    s0: tl.constexpr = y.shape[0]
    s1: tl.constexpr = y.shape[1]
    s2: tl.constexpr = y.shape[2]
    o = (tl.arange(0, s0)[:, None, None] * s1 * s2 + tl.arange(0, s1)[None, :, None] * s2
         + tl.arange(0, s2)[None, None, :])
    tl.store(out_ptr + o, y)


@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
def test_permute_3d(dims):
    a, b, c = 2, 4, 8
    x = torch.arange(a * b * c, dtype=torch.int32).reshape(a, b, c)
    out = torch.zeros(a * b * c, dtype=torch.int32)
    _permute_kernel[(1,)](x, out, A=a, B=b, C=c, D0=dims[0], D1=dims[1], D2=dims[2])
    assert torch.equal(out, x.permute(dims).reshape(-1))


@triton.jit
def _reshape_kernel(x_ptr, r_ptr, v_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    r = tl.reshape(x, (N, M))  # row-major reinterpretation, not a transpose
    tl.store(r_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], r)
    flat = tl.reshape(x, M * N)
    tl.store(v_ptr + tl.arange(0, M * N), flat)
    # tl.view may reorder elements; its sum is unchanged
    v = tl.view(x, (M * N,))
    tl.store(s_ptr, tl.sum(v, axis=0))


def test_reshape_and_view():
    m, n = 4, 16
    x = torch.arange(m * n, dtype=torch.int32).reshape(m, n)
    r = torch.zeros(n, m, dtype=torch.int32)
    v = torch.zeros(m * n, dtype=torch.int32)
    s = torch.zeros(1, dtype=torch.int32)
    _reshape_kernel[(1,)](x, r, v, s, M=m, N=n)
    assert torch.equal(r, x.reshape(n, m))
    assert torch.equal(v, x.reshape(-1))
    assert s.item() == int(x.sum())


@triton.jit
def _broadcast_kernel(x_ptr, y_ptr, b_ptr, e_ptr, w_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rn)  # (N,)
    y = tl.load(y_ptr + rm)  # (M,)
    b = tl.broadcast_to(x[None, :], (M, N))
    tl.store(b_ptr + rm[:, None] * N + rn[None, :], b)
    e = tl.expand_dims(y, 1)  # (M, 1)
    tl.static_assert(e.shape[0] == M and e.shape[1] == 1)
    e2 = tl.expand_dims(x, 0)  # (1, N)
    tl.store(e_ptr + rm[:, None] * N + rn[None, :], e * 1000 + e2)
    both, _ = tl.broadcast(y[:, None], x[None, :])
    w = both + tl.zeros((M, N), tl.int32)
    tl.store(w_ptr + rm[:, None] * N + rn[None, :], w)


def test_broadcast_to_expand_dims_and_none_indexing():
    m, n = 8, 16
    x = torch.arange(n, dtype=torch.int32)
    y = torch.arange(m, dtype=torch.int32) * 7
    b = torch.zeros(m, n, dtype=torch.int32)
    e = torch.zeros(m, n, dtype=torch.int32)
    w = torch.zeros(m, n, dtype=torch.int32)
    _broadcast_kernel[(1,)](x, y, b, e, w, M=m, N=n)
    assert torch.equal(b, x[None, :].expand(m, n))
    assert torch.equal(e, y[:, None] * 1000 + x[None, :])
    assert torch.equal(w, y[:, None].expand(m, n))


@triton.jit
def _index_colon_kernel(out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = r[:, None]  # (N, 1)
    b = r[None, :]  # (1, N)
    c = r[:]  # unchanged
    d = a[:, :, None]  # (N, 1, 1)
    tl.static_assert(len(d.shape) == 3 and d.shape[0] == N and d.shape[2] == 1)
    tl.static_assert(len(c.shape) == 1)
    tl.store(out_ptr + a * N + b, a * 100 + b + tl.sum(tl.sum(d, axis=2), axis=1)[:, None] * 0 + c[None, :] * 0)


def test_indexing_with_none_and_colon():
    n = 8
    out = torch.zeros(n, n, dtype=torch.int32)
    _index_colon_kernel[(1,)](out, N=n)
    i = torch.arange(n, dtype=torch.int32)
    assert torch.equal(out, i[:, None] * 100 + i[None, :])


@triton.jit
def _creation_kernel(z_ptr, f_ptr, zl_ptr, fi_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    z = tl.zeros((N,), dtype=tl.float16)
    tl.static_assert(z.dtype == tl.float16)
    tl.store(z_ptr + r, z + 1.5)
    f = tl.full((2, N), 3.25, tl.float32)
    tl.store(f_ptr + tl.arange(0, 2)[:, None] * N + r[None, :], f)
    x = r.to(tl.int16)
    zl = tl.zeros_like(x)
    tl.static_assert(zl.dtype == tl.int16)
    tl.store(zl_ptr + r, zl - 3)
    fi = tl.full((N,), -7, tl.int8)
    tl.store(fi_ptr + r, fi)


def test_zeros_full_zeros_like():
    n = 16
    z = torch.empty(n, dtype=torch.float16)
    f = torch.empty(2, n)
    zl = torch.empty(n, dtype=torch.int16)
    fi = torch.empty(n, dtype=torch.int8)
    _creation_kernel[(1,)](z, f, zl, fi, N=n)
    assert torch.equal(z, torch.full((n,), 1.5, dtype=torch.float16))
    assert torch.equal(f, torch.full((2, n), 3.25))
    assert torch.equal(zl, torch.full((n,), -3, dtype=torch.int16))
    assert torch.equal(fi, torch.full((n,), -7, dtype=torch.int8))
