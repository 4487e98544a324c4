"""sort, topk, flip, histogram, gather, join/split/interleave, cat, swizzle2d, squeeze/unsqueeze,
scans and the small math builtins (umulhi, fdiv, div_rn, sqrt_rn), each against numpy/torch/Python
or values recorded from Triton 3.6 on an H200.

Tolerances: everything here is exact (integer results, permutations of the input, and
correctly rounded division/square root) except cumprod in floating point, compared with an fp64
running product at rtol 1e-5.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import cuda_accuracy
import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, OutOfBoundsError


def _rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------------------
# sort
# ------------------------------------------------------------------------------------------------
@triton.jit
def _sort_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(o_ptr + rm * N + rn, tl.sort(x, descending=DESC))


def _sort(x: np.ndarray, descending: bool) -> np.ndarray:
    out = np.empty_like(x)
    _sort_kernel[(1,)](x, out, M=x.shape[0], N=x.shape[1], DESC=descending)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.uint8, np.int64])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape", [(1, 2), (4, 64), (8, 16)])
def test_sort_orders_each_row(dtype, descending, shape):
    g = _rng(1)
    x = (g.standard_normal(shape) * 50).astype(dtype) if np.dtype(dtype).kind == "f" else \
        g.integers(0 if np.dtype(dtype).kind == "u" else -100, 100, shape).astype(dtype)
    expected = np.sort(x, axis=-1)
    if descending:
        expected = expected[:, ::-1]
    assert np.array_equal(_sort(x, descending), expected)


def _gpu_sort_rows():
    """The first two rows of the matrix the H200 run sorted: NaNs, and -0.0 beside +0.0."""
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)[:2].copy()
    x[0, 3] = np.nan
    x[0, 10] = np.nan
    x[1, 5], x[1, 6], x[1, 7] = -0.0, 0.0, -0.0
    return x


# Triton 3.6 on an H200: position i of the sorted row holds input element GPU_ORDER[i]. The
# compare-and-swap network lets a NaN or a signed zero overwrite its partner: some values are
# duplicated and the NaNs are gone, and all three zeros come out as -0.0.
GPU_ORDER = {
    False: [[12, 9, 14, 30, 27, 26, 15, 8, 22, 16, 4, 28, 17, 13, 31, 1, 1, 20, 11, 11, 25, 0, 0, 29, 23, 5, 18, 24,
             7, 19, 6, 21],
            [22, 8, 19, 26, 29, 27, 4, 31, 28, 13, 0, 20, 5, 5, 5, 2, 12, 3, 18, 23, 24, 1, 21, 25, 11, 17, 10, 14,
             9, 30, 16, 15]],
    True: [[21, 6, 19, 7, 24, 18, 5, 23, 29, 0, 0, 25, 11, 11, 20, 1, 1, 31, 13, 17, 28, 4, 16, 22, 8, 15, 26, 27,
            30, 14, 9, 12],
           [15, 16, 30, 9, 14, 10, 17, 11, 25, 21, 1, 24, 23, 18, 3, 12, 2, 5, 5, 5, 20, 0, 13, 28, 31, 4, 27, 29,
            26, 19, 8, 22]],
}


@pytest.mark.parametrize("descending", [False, True])
def test_sort_gives_what_a_gpu_gives_for_nan_and_signed_zeros(descending):
    x = _gpu_sort_rows()
    out = _sort(x, descending)
    expected = np.stack([x[row, GPU_ORDER[descending][row]] for row in range(2)])
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
    zeros = np.zeros((1, 32), dtype=np.float32)
    zeros[0, ::3] = -0.0
    assert np.array_equal(np.signbit(_sort(zeros, descending)), np.full((1, 32), not descending))  # as on the H200


@triton.jit
def _sort_1d_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, tl.sort(tl.load(x_ptr + r), dim=0, descending=True))


@triton.jit
def _sort_dim0_kernel(x_ptr, o_ptr, N: tl.constexpr):
    rm = tl.arange(0, N)[:, None]
    rn = tl.arange(0, N)[None, :]
    tl.store(o_ptr + rm * N + rn, tl.sort(tl.load(x_ptr + rm * N + rn), dim=0))


def test_sort_1d_with_an_explicit_dim_and_only_along_the_last_dim():
    x = _rng(2).integers(-1000, 1000, 128).astype(np.int32)
    out = np.empty_like(x)
    _sort_1d_kernel[(1,)](x, out, N=128)
    assert np.array_equal(out, np.sort(x)[::-1])
    with pytest.raises(CompilationError, match="last dimension"):
        _sort_dim0_kernel[(1,)](np.zeros(16, np.float32), np.zeros(16, np.float32), N=4)


# ------------------------------------------------------------------------------------------------
# topk
# ------------------------------------------------------------------------------------------------
@triton.jit
def _topk_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, DESC: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    x = tl.load(x_ptr + rm * N + tl.arange(0, N)[None, :])
    top = tl.topk(x, K, descending=DESC)
    tl.static_assert(top.shape[1] == K)
    tl.store(o_ptr + rm * K + tl.arange(0, K)[None, :], top)


def _expected_topk(x: np.ndarray, k: int, descending: bool) -> np.ndarray:
    ordered = np.sort(x, axis=-1)
    return (ordered[..., ::-1] if descending else ordered)[..., :k]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("shape, k", [((4, 64), 1), ((4, 64), 8), ((2, 16), 16), ((8, 32), 4), ((1, 2), 1)])
def test_topk_gives_the_k_extreme_values_of_each_row_in_order(dtype, descending, shape, k):
    g = _rng(5)
    x = (g.standard_normal(shape) * 50).astype(dtype) if np.dtype(dtype).kind == "f" else \
        g.integers(0 if np.dtype(dtype).kind == "u" else -100, 100, shape).astype(dtype)
    out = np.zeros((shape[0], k), dtype=dtype)
    _topk_kernel[(1,)](x, out, M=shape[0], N=shape[1], K=k, DESC=descending)
    assert np.array_equal(out, _expected_topk(x, k, descending))


@triton.jit
def _topk_1d_kernel(x_ptr, o_ptr, N: tl.constexpr, K: tl.constexpr):
    tl.store(o_ptr + tl.arange(0, K), tl.topk(tl.load(x_ptr + tl.arange(0, N)), K, dim=0))


def test_topk_of_a_1d_block_defaults_to_the_largest():
    x = _rng(6).permutation(256).astype(np.int32)
    out = np.zeros(8, dtype=np.int32)
    _topk_1d_kernel[(1,)](x, out, N=256, K=8)
    assert out.tolist() == list(range(255, 247, -1))


@triton.jit
def _topk_bad_kernel(x_ptr, o_ptr, K: tl.constexpr, DIM: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.store(o_ptr + tl.arange(0, 4)[:, None] + tl.arange(0, K)[None, :], tl.topk(x, K, dim=DIM))


@pytest.mark.parametrize("k, dim, message", [(3, None, "power of two"), (16, None, "no larger than"),
                                             (2, 0, "last dimension")])
def test_topk_rejects_a_bad_k_or_dim(k, dim, message):
    x, out = np.zeros(32, np.float32), np.zeros(64, np.float32)
    with pytest.raises(CompilationError, match=message):
        _topk_bad_kernel[(1,)](x, out, K=k, DIM=dim)


# ------------------------------------------------------------------------------------------------
# flip
# ------------------------------------------------------------------------------------------------
@triton.jit
def _flip_kernel(x_ptr, o_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, DIM: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    offs = ra * B * C + rb * C + rc
    x = tl.load(x_ptr + offs)
    if DIM is None:
        y = tl.flip(x)
    else:
        y = x.flip(DIM)
    tl.store(o_ptr + offs, y)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3, None])
def test_flip_reverses_one_dimension(dim):
    x = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    x[0, 0, 0] = np.nan
    out = np.empty_like(x)
    _flip_kernel[(1,)](x, out, A=2, B=4, C=8, DIM=dim)
    assert np.array_equal(out, np.flip(x, axis=-1 if dim is None else dim), equal_nan=True)


# ------------------------------------------------------------------------------------------------
# histogram
# ------------------------------------------------------------------------------------------------
@triton.jit
def _hist_kernel(x_ptr, o_ptr, N: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + r)
    if MASKED:
        h = tl.histogram(x, BINS, mask=(x >= 0) & (x < BINS) & (r % 3 != 0))
    else:
        h = tl.histogram(x, BINS)
    tl.store(o_ptr + pid * BINS + tl.arange(0, BINS), h)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int16])
def test_histogram_counts_each_value_per_program(dtype):
    programs, n, bins = 3, 256, 32
    x = _rng(3).integers(0, bins, (programs, n)).astype(dtype)
    out = np.zeros((programs, bins), dtype=np.int32)
    _hist_kernel[(programs,)](x, out, N=n, BINS=bins, MASKED=False)
    for p in range(programs):
        assert np.array_equal(out[p], np.bincount(x[p].astype(np.int64), minlength=bins))


def test_histogram_with_a_mask_counts_only_the_masked_lanes():
    n, bins = 256, 16
    x = _rng(4).integers(-5, 40, n).astype(np.int32)  # out-of-range values are masked out
    out = np.zeros(bins, dtype=np.int32)
    _hist_kernel[(1,)](x, out, N=n, BINS=bins, MASKED=True)
    keep = (x >= 0) & (x < bins) & (np.arange(n) % 3 != 0)
    assert np.array_equal(out, np.bincount(x[keep], minlength=bins))


def test_histogram_value_outside_the_bins_is_an_error():
    x = np.arange(64, dtype=np.int32) % 32
    x[37] = 40
    with pytest.raises(OutOfBoundsError, match=r"value 40 is outside the 32 bins") as info:
        _hist_kernel[(1,)](x, np.zeros(32, dtype=np.int32), N=64, BINS=32, MASKED=False)
    assert "bin value & 31" in str(info.value) and "lane 37" in str(info.value)


# ------------------------------------------------------------------------------------------------
# gather
# ------------------------------------------------------------------------------------------------
@triton.jit
def _gather_kernel(s_ptr, i_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, IM: tl.constexpr, IN: tl.constexpr,
                   AXIS: tl.constexpr):
    src = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    offs = tl.arange(0, IM)[:, None] * IN + tl.arange(0, IN)[None, :]
    tl.store(o_ptr + offs, tl.gather(src, tl.load(i_ptr + offs), AXIS))


@pytest.mark.parametrize("axis, index_shape", [(1, (8, 32)), (0, (4, 16)), (-1, (8, 4)), (0, (16, 16))])
def test_gather_matches_torch_gather(axis, index_shape):
    g = _rng(5)
    src = torch.from_numpy(g.standard_normal((8, 16)).astype(np.float32))
    extent = src.shape[axis]
    index = torch.from_numpy(g.integers(0, extent, index_shape).astype(np.int32))
    out = torch.empty(index_shape)
    _gather_kernel[(1,)](src, index, out, M=8, N=16, IM=index_shape[0], IN=index_shape[1], AXIS=axis)
    assert torch.equal(out, torch.gather(src, axis, index.long()))


def test_gather_index_out_of_range_is_an_error_naming_the_lane():
    index = np.zeros((8, 16), dtype=np.int32)
    index[2, 5] = 16
    with pytest.raises(OutOfBoundsError, match=r"lane \(2, 5\): index 16 is out of range for axis 1 of size 16"):
        _gather_kernel[(1,)](np.zeros((8, 16), np.float32), index, np.zeros((8, 16), np.float32),
                             M=8, N=16, IM=8, IN=16, AXIS=1)


def test_gather_shape_mismatch_is_a_compile_error():
    with pytest.raises(CompilationError, match="must equal the src shape"):
        _gather_kernel[(1,)](np.zeros((8, 16), np.float32), np.zeros((4, 8), np.int32), np.zeros((4, 8), np.float32),
                             M=8, N=16, IM=4, IN=8, AXIS=1)


# ------------------------------------------------------------------------------------------------
# join / split / interleave / cat
# ------------------------------------------------------------------------------------------------
@triton.jit
def _join_split_kernel(a_ptr, b_ptr, j_ptr, i_ptr, s_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    j = tl.join(a, b)
    tl.static_assert(j.shape[0] == N and j.shape[1] == 2)
    tl.store(j_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    tl.store(i_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))
    x, y = j.split()
    tl.store(s_ptr + r, x * 1000 + y)
    pair = tl.join(tl.sum(a, 0), 7)  # two scalars give a block of two
    tl.static_assert(len(pair.shape) == 1 and pair.shape[0] == 2)
    first, second = tl.split(pair)
    tl.store(s_ptr + N + tl.arange(0, 2), tl.join(second, first))


def test_join_split_interleave():
    n = 8
    a = np.arange(n, dtype=np.int32)
    b = a + 100
    joined = np.zeros((n, 2), np.int32)
    inter = np.zeros(2 * n, np.int32)
    split = np.zeros(n + 2, np.int32)
    _join_split_kernel[(1,)](a, b, joined, inter, split, N=n)
    assert np.array_equal(joined, np.stack([a, b], axis=-1))
    assert np.array_equal(inter, np.stack([a, b], axis=-1).reshape(-1))  # what the H200 gave too: 0 100 1 101 ...
    assert np.array_equal(split[:n], a * 1000 + b)
    assert split[n:].tolist() == [7, int(a.sum())]


@triton.jit
def _join_mixed_kernel(a_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.join(tl.load(a_ptr + r), r.to(tl.float16))


@triton.jit
def _split_bad_kernel(a_ptr, N: tl.constexpr):
    tl.split(tl.load(a_ptr + tl.arange(0, N)))


def test_join_and_split_errors():
    with pytest.raises(CompilationError, match="same dtype"):
        _join_mixed_kernel[(1,)](np.zeros(4, np.float32), N=4)
    with pytest.raises(CompilationError, match="last dimension has size 2"):
        _split_bad_kernel[(1,)](np.zeros(4, np.float32), N=4)


@triton.jit
def _cat_kernel(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr, REORDER: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * N + rn)
    b = tl.load(b_ptr + rm * N + rn)
    c = tl.cat(a, b, can_reorder=REORDER, dim=DIM)
    if DIM == 0:
        tl.store(o_ptr + tl.arange(0, 2 * M)[:, None] * N + rn, c)
    else:
        tl.store(o_ptr + rm * (2 * N) + tl.arange(0, 2 * N)[None, :], c)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reorder", [False, True])
def test_cat_concatenates_in_order(dim, reorder):
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = a + 100
    out = np.zeros(64, dtype=np.float32)
    _cat_kernel[(1,)](a, b, out, M=4, N=8, DIM=dim, REORDER=reorder)
    assert np.array_equal(out.reshape((8, 8) if dim == 0 else (4, 16)), np.concatenate([a, b], axis=dim))


@triton.jit
def _cat_bad_kernel(a_ptr, N: tl.constexpr, K: tl.constexpr):
    tl.cat(tl.load(a_ptr + tl.arange(0, N)), tl.load(a_ptr + tl.arange(0, K)), can_reorder=True)


def test_cat_result_must_have_power_of_two_dimensions():
    with pytest.raises(CompilationError, match="power of two"):
        _cat_bad_kernel[(1,)](np.zeros(8, np.float32), N=8, K=4)


# ------------------------------------------------------------------------------------------------
# swizzle2d, ravel
# ------------------------------------------------------------------------------------------------
@triton.jit
def _swizzle_kernel(o_ptr, I: tl.constexpr, J: tl.constexpr, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr):
    i = tl.arange(0, I)[:, None]
    j = tl.arange(0, J)[None, :]
    ni, nj = tl.swizzle2d(i, j, SI, SJ, SG)
    tl.store(o_ptr + i * J + j, ni * 100 + nj)


def test_swizzle2d_documented_example():
    # Triton's docstring: size_i = size_j = 4, size_g = 2 maps the row-major ids 0..15 to
    # [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    out = np.zeros(16, dtype=np.int32)
    _swizzle_kernel[(1,)](out, I=4, J=4, SI=4, SJ=4, SG=2)
    new_i, new_j = out // 100, out % 100
    ids = np.zeros((4, 4), dtype=np.int32)
    ids[new_i, new_j] = np.arange(16).reshape(4, 4).ravel()
    assert ids.tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]


GPU_SWIZZLE = {  # Triton 3.6 on an H200, i in 0..7, j in 0..3: new_i * 100 + new_j
    (5, 1, 3): [0, 100, 200, 300, 100, 200, 300, 400, 200, 300, 400, 301, 300, 400, 301, 600, 400, 301, 600, 599, 301,
                600, 599, 598, 600, 599, 598, 900, 599, 598, 900, 1000],
    (8, 4, 3): [0, 100, 200, 1, 101, 201, 2, 102, 202, 3, 103, 203, 300, 400, 500, 301, 401, 501, 302, 402, 502, 303,
                403, 503, 600, 700, 601, 701, 602, 702, 603, 703],
    (7, 4, 2): [0, 100, 1, 101, 2, 102, 3, 103, 200, 300, 201, 301, 202, 302, 203, 303, 400, 500, 401, 501, 402, 502,
                403, 503, 600, 601, 602, 603, 604, 605, 606, 607],
}


@pytest.mark.parametrize("sizes", list(GPU_SWIZZLE))
def test_swizzle2d_matches_a_gpu_also_in_a_short_last_group(sizes):
    out = np.zeros(32, dtype=np.int32)
    _swizzle_kernel[(1,)](out, I=8, J=4, SI=sizes[0], SJ=sizes[1], SG=sizes[2])
    assert out.tolist() == GPU_SWIZZLE[sizes]


@triton.jit
def _ravel_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    flat = tl.ravel(x.T)
    tl.static_assert(len(flat.shape) == 1)
    tl.store(o_ptr + tl.arange(0, M * N), flat)


def test_ravel_flattens_row_major():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros(32, dtype=np.float32)
    _ravel_kernel[(1,)](x, out, M=4, N=8)
    assert np.array_equal(out, x.T.ravel())


@triton.jit
def _squeeze_kernel(o_ptr, SHAPE: tl.constexpr, DIM: tl.constexpr, UNSQUEEZE: tl.constexpr,
                    EXPECTED: tl.constexpr):
    x = tl.reshape(tl.arange(0, 16), SHAPE)
    if UNSQUEEZE:
        y = tl.unsqueeze(x, DIM)
    else:
        y = tl.squeeze(x, DIM)
    tl.static_assert(len(y.shape) == len(EXPECTED))
    for i in tl.static_range(len(EXPECTED)):
        tl.static_assert(y.shape[i] == EXPECTED[i])
    tl.store(o_ptr + tl.arange(0, 16), tl.ravel(y))


@pytest.mark.parametrize("shape, dim", [((1, 16), 0), ((4, 1, 4), 1), ((16, 1), -1), ((1, 2, 8), -3),
                                        ((16, 1), 1)])
def test_squeeze_removes_a_size_one_dimension_as_torch_does(shape, dim):
    expected = tuple(torch.arange(16).reshape(shape).squeeze(dim).shape)
    out = np.zeros(16, np.int32)
    _squeeze_kernel[(1,)](out, SHAPE=shape, DIM=dim, UNSQUEEZE=False, EXPECTED=expected)
    assert out.tolist() == list(range(16))


@pytest.mark.parametrize("shape, dim", [((16,), 0), ((16,), 1), ((16,), -1), ((4, 4), 1), ((4, 4), -3),
                                        ((2, 8), 2)])
def test_unsqueeze_inserts_a_size_one_dimension_as_torch_does(shape, dim):
    expected = tuple(torch.arange(16).reshape(shape).unsqueeze(dim).shape)
    out = np.zeros(16, np.int32)
    _squeeze_kernel[(1,)](out, SHAPE=shape, DIM=dim, UNSQUEEZE=True, EXPECTED=expected)
    assert out.tolist() == list(range(16))


@pytest.mark.parametrize("shape, dim, unsqueeze, message", [((4, 4), 0, False, "size 1"),
                                                           ((1, 16), 2, False, "out of range"),
                                                           ((16,), 2, True, "out of range")])
def test_squeeze_and_unsqueeze_errors(shape, dim, unsqueeze, message):
    with pytest.raises(CompilationError, match=message):
        _squeeze_kernel[(1,)](np.zeros(16, np.int32), SHAPE=shape, DIM=dim, UNSQUEEZE=unsqueeze, EXPECTED=())


# ------------------------------------------------------------------------------------------------
# cumprod, associative_scan with a @jit combine
# ------------------------------------------------------------------------------------------------
@triton.jit
def _cumprod_kernel(x_ptr, o_ptr, N: tl.constexpr, REVERSE: tl.constexpr, BF16: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if BF16:
        y = tl.cumprod(x.to(tl.bfloat16), 0, reverse=REVERSE)
        tl.static_assert(y.dtype == tl.float32)  # Triton computes bf16 scans in fp32
    else:
        y = tl.cumprod(x, 0, reverse=REVERSE)
    tl.store(o_ptr + r, y)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", ["fp32", "int32", "bf16"])
def test_cumprod(reverse, kind):
    n = 32
    g = _rng(6)
    if kind == "int32":
        x = g.integers(-3, 4, n).astype(np.int32)
    else:
        x = (1 + g.standard_normal(n) * 0.1).astype(np.float32)
    out = np.zeros(n, dtype=x.dtype)
    _cumprod_kernel[(1,)](x, out, N=n, REVERSE=reverse, BF16=kind == "bf16")
    source = torch.from_numpy(x).to(torch.bfloat16).float().numpy() if kind == "bf16" else x
    wide = source[::-1] if reverse else source
    expected = np.cumprod(wide.astype(np.int64 if kind == "int32" else np.float64))
    expected = expected[::-1] if reverse else expected
    if kind == "int32":
        assert np.array_equal(out, expected.astype(np.int32))  # wraps as int32 would
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-5)


@triton.jit
def _running_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _linear_recurrence(a1, b1, a2, b2):
    # (a1, b1) then (a2, b2) applied to h: h -> a2 * (a1 * h + b1) + b2
    return a1 * a2, a2 * b1 + b2


@triton.jit
def _scan_kernel(a_ptr, b_ptr, m_ptr, h_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(m_ptr + offs, tl.associative_scan(b, 1, _running_max))
    _, h = tl.associative_scan((a, b), 1, _linear_recurrence)
    tl.store(h_ptr + offs, h)
    _, hr = tl.associative_scan((a, b), 1, _linear_recurrence, reverse=True)
    tl.store(r_ptr + offs, hr)


def test_associative_scan_with_jit_combines_single_and_tuple_inputs():
    m, n = 4, 16
    g = _rng(7)
    a = (g.random((m, n)) * 0.9).astype(np.float64)
    b = g.standard_normal((m, n))
    outs = [np.zeros((m, n)) for _ in range(3)]
    _scan_kernel[(1,)](a, b, *outs, M=m, N=n)
    running_max, forward, backward = outs
    assert np.array_equal(running_max, np.maximum.accumulate(b, axis=1))
    h = np.zeros(m)
    for k in range(n):  # h_k = a_k * h_{k-1} + b_k
        h = a[:, k] * h + b[:, k]
        np.testing.assert_allclose(forward[:, k], h, rtol=1e-12)
    h = np.zeros(m)
    for k in reversed(range(n)):
        h = a[:, k] * h + b[:, k]
        np.testing.assert_allclose(backward[:, k], h, rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# umulhi, fdiv, div_rn, sqrt_rn at tl level
# ------------------------------------------------------------------------------------------------
@triton.jit
def _umulhi_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, tl.umulhi(tl.load(x_ptr + r), tl.load(y_ptr + r)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_umulhi_is_the_high_half_of_the_product(dtype):
    info = np.iinfo(dtype)
    g = _rng(8)
    x = g.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    y = g.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    x[:4] = [info.min, info.max, 0, info.max]
    y[:4] = [info.min, info.max, info.max, info.min]
    out = np.zeros_like(x)
    _umulhi_kernel[(1,)](x, y, out, N=64)
    # the high half of the double-width product (Python's >> floors, as the signed high word does)
    assert [int(v) for v in out] == [(int(a) * int(b)) >> info.bits for a, b in zip(x, y)]


@triton.jit
def _division_kernel(x_ptr, y_ptr, f_ptr, d_ptr, s_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    tl.store(f_ptr + r, tl.fdiv(x, y))
    tl.store(d_ptr + r, tl.div_rn(x, y))
    tl.store(s_ptr + r, tl.sqrt_rn(tl.abs(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fdiv_div_rn_sqrt_rn_round_to_nearest(dtype):
    from fractions import Fraction

    g = _rng(9)
    x = (g.standard_normal(256) * 1e3).astype(dtype)
    y = (g.standard_normal(256) * 1e-2).astype(dtype)
    outs = [np.zeros_like(x) for _ in range(3)]
    _division_kernel[(1,)](x, y, *outs, N=256)
    exact = [dtype(float(Fraction(float(a)) / Fraction(float(b)))) for a, b in zip(x, y)]  # one rounding to dtype
    if dtype == np.float32:  # a quotient of fp32 values rounds the same via fp64 (53 >= 2 * 24 + 2)
        exact = [np.float32(float(a) / float(b)) for a, b in zip(x, y)]
    if cuda_accuracy.on_cuda() and dtype == np.float32:  # tl.fdiv is div.full.f32 there, as under Triton
        np.testing.assert_array_max_ulp(outs[0], np.array(exact, dtype=dtype), maxulp=2)
    else:
        assert np.array_equal(outs[0], np.array(exact, dtype=dtype))
    assert np.array_equal(outs[1], np.array(exact, dtype=dtype))
    assert np.array_equal(outs[2], np.sqrt(np.abs(x)))  # IEEE sqrt is correctly rounded


@triton.jit
def _fdiv_fp16_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    q = tl.fdiv(x, x + 1)
    tl.static_assert(q.dtype == tl.float32)  # as Triton 3.9 types it: fp16 divides in fp32
    tl.store(o_ptr + r, q)


@triton.jit
def _fdiv_int_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, tl.fdiv(tl.load(x_ptr + r), 2))


def test_fdiv_divides_fp16_in_fp32_and_rejects_integers():
    x = np.linspace(0, 3, 8).astype(np.float16)
    out = np.zeros_like(x)
    _fdiv_fp16_kernel[(1,)](x, out, N=8)
    quotient = (x.astype(np.float64) / (x + np.float16(1)).astype(np.float64)).astype(np.float32)
    assert np.array_equal(out, quotient.astype(np.float16))  # stored through the fp16 pointer
    # Triton 3.9 promotes as for `/`: a Python int beside an fp32 block is an fp32 scalar ...
    halves = np.zeros(8, np.float32)
    _fdiv_int_kernel[(1,)](np.arange(8, dtype=np.float32), halves, N=8)
    assert np.array_equal(halves, np.arange(8, dtype=np.float32) / 2)
    # ... but two integer operands stay integers, which fdiv refuses
    with pytest.raises(CompilationError, match="fdiv requires floating-point operands after type promotion"):
        _fdiv_int_kernel[(1,)](np.zeros(8, np.int32), np.zeros(8, np.int32), N=8)


# ------------------------------------------------------------------------------------------------
# inside control flow that differs between programs
# ------------------------------------------------------------------------------------------------
@triton.jit
def _predicated_kernel(x_ptr, i_ptr, o_ptr, h_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + r)
    index = tl.load(i_ptr + pid * N + r)
    y = x
    h = tl.zeros((N,), dtype=tl.int32)
    if pid % 2 == 0:  # odd programs hold indices out of range: they must not be checked
        y = tl.sort(tl.gather(x, index, 0), descending=True)
        h = tl.histogram(index, N)
    tl.store(o_ptr + pid * N + r, y)
    tl.store(h_ptr + pid * N + r, h)


def test_ops_in_a_branch_only_some_programs_take():
    programs, n = 6, 16
    g = _rng(10)
    x = g.standard_normal((programs, n)).astype(np.float32)
    index = g.integers(0, n, (programs, n)).astype(np.int32)
    index[1::2] += 1000
    out = np.zeros_like(x)
    hist = np.zeros((programs, n), np.int32)
    _predicated_kernel[(programs,)](x, index, out, hist, N=n)
    for p in range(programs):
        if p % 2 == 0:
            assert np.array_equal(out[p], np.sort(x[p][index[p]])[::-1])
            assert np.array_equal(hist[p], np.bincount(index[p], minlength=n))
        else:
            assert np.array_equal(out[p], x[p]) and not hist[p].any()
