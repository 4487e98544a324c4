"""Block pointers (``tl.make_block_ptr``, ``tl.advance``, ``tl.load``/``tl.store`` with
``boundary_check`` and ``padding_option``), checked against torch/numpy slicing."""
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, OutOfBoundsError


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@triton.jit
def copy_tiles(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, (M, N), (sxm, sxn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (sym, syn), (pm * BM, pn * BN), (BM, BN), (0, 1))
    tl.store(dst, tl.load(src, boundary_check=(0, 1)) * 2, boundary_check=(0, 1))


def test_copy_with_boundary_check_on_a_transposed_view():
    x = _randn(45, 37).t()  # shape (37, 45), strides (1, 37)
    y = torch.zeros(37, 45)
    copy_tiles[(3, 3)](x, y, 37, 45, *x.stride(), *y.stride(), BM=16, BN=16)
    assert torch.equal(y, 2 * x)


def test_store_boundary_check_leaves_lanes_outside_the_shape_unwritten():
    # the destination is the top-left (20, 30) corner of a (32, 48) buffer: the tiles cover it all
    x = _randn(20, 30, seed=1)
    buffer = torch.full((32, 48), -5.0)
    copy_tiles[(2, 2)](x, buffer, 20, 30, *x.stride(), *buffer.stride(), BM=16, BN=32)
    expected = torch.full((32, 48), -5.0)
    expected[:20, :30] = 2 * x
    assert torch.equal(buffer, expected)


@triton.jit
def matmul_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, (M, K), (sam, sak), (pm * BM, 0), (BM, BK), (1, 0))
    b = tl.make_block_ptr(b_ptr, (K, N), (sbk, sbn), (0, pn * BN), (BK, BN), (0, 1))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)), input_precision="ieee")
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, (BK, 0))
    c = tl.make_block_ptr(c_ptr, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


def test_matmul_advancing_block_pointers_through_a_loop():
    M, N, K = 50, 40, 70
    a, b = _randn(M, K, seed=2), _randn(K, N, seed=3)
    c = torch.zeros(M, N)
    matmul_block_ptr[(4, 3)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=16, BN=16, BK=16)
    torch.testing.assert_close(c, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-5)


def test_only_the_advanced_offsets_are_carried():
    ir = matmul_block_ptr.ir("*fp32,*fp32,*fp32" + ",i32" * 9, BM=16, BN=16, BK=16)
    loop = next(line for line in ir.splitlines() if " = for " in line)
    # the accumulator, a's column offset and b's row offset: base pointers, shapes, strides and
    # the offsets tl.advance leaves alone stay outside the loop
    assert loop.split(" = for ")[0].count("%") == 3


@triton.jit
def padded_load(x_ptr, out_ptr, M, N, row, col, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (row, col), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option=PADDING))


def _padded_reference(x, row, col, bm, bn, fill):
    out = np.full((bm, bn), fill, dtype=np.float32)
    for i in range(bm):
        for j in range(bn):
            r, c = row + i, col + j
            if 0 <= r < x.shape[0] and 0 <= c < x.shape[1]:
                out[i, j] = x[r, c]
    return out


@pytest.mark.parametrize("padding,fill", [("zero", 0.0), ("nan", np.nan), ("", 0.0)])
@pytest.mark.parametrize("row,col", [(-3, 5), (10, -6), (12, 20)])
def test_padding_option_fills_the_lanes_outside_the_tensor(padding, fill, row, col):
    x = _randn(15, 22, seed=4)
    out = torch.zeros(8, 8)
    padded_load[(1,)](x, out, 15, 22, row, col, BM=8, BN=8, PADDING=padding)
    np.testing.assert_array_equal(out.numpy(), _padded_reference(x.numpy(), row, col, 8, 8, fill))


@triton.jit
def check_rows_only(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))


@pytest.mark.not_on_backend("cuda", reason="the CUDA backend compiles no bounds checks yet: a stray access there is "
                            "undefined behaviour, as under Triton (docs/cuda-backend.md)")
def test_unchecked_dimensions_are_not_masked():
    x = _randn(20, 16, seed=5)
    out = torch.zeros(20, 16)
    check_rows_only[(3,)](x, out, 20, 16, BM=8, BN=16)  # columns fit exactly: fine
    assert torch.equal(out, x)
    x = _randn(20, 12, seed=5)  # 16 columns read from rows of 12: the last rows run past the end
    with pytest.raises(OutOfBoundsError, match="out-of-bounds load"):
        check_rows_only[(3,)](x, torch.zeros(20, 12), 20, 12, BM=8, BN=16)


@triton.jit
def reverse_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x reversed, reading x from its end block by block with a negative advance."""
    src = tl.make_block_ptr(x_ptr, (n,), (1,), (n - BLOCK,), (BLOCK,), (0,))
    dst = tl.make_block_ptr(out_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    for i in range(tl.cdiv(n, BLOCK)):
        tl.store(dst, tl.flip(tl.load(src, boundary_check=(0,))), boundary_check=(0,))
        src = tl.advance(src, (-BLOCK,))
        dst = tl.advance(dst, (BLOCK,))


def test_negative_offsets_and_advance_in_one_dimension():
    x = torch.arange(37, dtype=torch.float32)
    out = torch.zeros(40)
    reverse_blocks[(1,)](x, out, 37, BLOCK=8)
    # the last block starts at -3: its first 3 lanes read 0 and its last 3 lanes fall past 37
    expected = torch.zeros(40)
    expected[:37] = x.flip(0)
    expected[37:] = 0.0
    assert torch.equal(out[:37], expected[:37])


@triton.jit
def branchy_tiles(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Even programs copy the tile below their own, odd ones the tile to the right."""
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    if pid % 2 == 0:
        src = tl.advance(src, (BM, 0))
    else:
        src = tl.advance(src, (0, BN))
    dst = tl.make_block_ptr(out_ptr, (4 * BM, BN), (BN, 1), (pid * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1)))


def test_block_pointer_joined_after_a_run_time_if():
    x = _randn(12, 10, seed=6)
    out = torch.zeros(32, 8)
    branchy_tiles[(4,)](x, out, 12, 10, BM=8, BN=8)
    padded = torch.zeros(16, 16)
    padded[:12, :10] = x
    for p in range(4):
        tile = padded[8:16, 0:8] if p % 2 == 0 else padded[0:8, 8:16]
        assert torch.equal(out[p * 8:(p + 1) * 8], tile)


@triton.jit
def move(ptr, cols):
    return tl.advance(ptr, (0, 0, cols))


@triton.jit
def sum_tiles_3d(x_ptr, out_ptr, B, M, N, sb, sm, sn, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Sums the (BB, BM, BN) tiles along the last axis, walking a tuple of two block pointers."""
    ptrs = (tl.make_block_ptr(x_ptr, (B, M, N), (sb, sm, sn), (0, 0, 0), (BB, BM, BN), (2, 1, 0)),
            tl.make_block_ptr(x_ptr, (B, M, N), (sb, sm, sn), (0, 0, BN), (BB, BM, BN), (2, 1, 0)))
    acc = tl.zeros((BB, BM, BN), dtype=tl.float32)
    for j in range(0, N, 2 * BN):
        acc += tl.load(ptrs[0], boundary_check=(2,)) + tl.load(ptrs[1], boundary_check=(2,))
        ptrs = (move(ptrs[0], 2 * BN), move(ptrs[1], 2 * BN))
    out = tl.make_block_ptr(out_ptr, (BB, BM, BN), (BM * BN, BN, 1), (0, 0, 0), (BB, BM, BN), (2, 1, 0))
    tl.store(out, acc)


def test_three_dimensional_block_pointers_in_a_carried_tuple():
    x = _randn(2, 4, 28, seed=7)
    out = torch.zeros(2, 4, 8)
    sum_tiles_3d[(1,)](x, out, 2, 4, 28, *x.stride(), BB=2, BM=4, BN=8)
    padded = torch.zeros(2, 4, 32)
    padded[..., :28] = x
    expected = padded.view(2, 4, 4, 8).sum(2)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


# errors ---------------------------------------------------------------------------------------
@triton.jit
def with_mask(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8,), (1,), (0,), (8,), (0,))
    tl.load(p, mask=tl.arange(0, 8) < 4)


@triton.jit
def plain_pointer_boundary_check(x_ptr):
    tl.load(x_ptr + tl.arange(0, 8), boundary_check=(0,))


@triton.jit
def int_nan_padding(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8,), (1,), (0,), (8,), (0,))
    tl.load(p, boundary_check=(0,), padding_option="nan")


@triton.jit
def store_wrong_dtype(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8,), (1,), (0,), (8,), (0,))
    tl.store(p, tl.zeros((8,), dtype=tl.float16))


@triton.jit
def wide_offsets(x_ptr, start):
    p = tl.make_block_ptr(x_ptr, (8,), (1,), (start.to(tl.int64),), (8,), (0,))
    tl.load(p)


@triton.jit
def bad_order(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 1))
    tl.load(p)


@triton.jit
def bad_dimension(x_ptr):
    p = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    tl.load(p, boundary_check=(2,))


@pytest.mark.parametrize("kernel,args,message", [
    (with_mask, (torch.zeros(8),), "mask and other cannot be given"),
    (plain_pointer_boundary_check, (torch.zeros(8),), "apply to block pointers"),
    (int_nan_padding, (torch.zeros(8, dtype=torch.int32),), "not supported for integer block pointers"),
    (store_wrong_dtype, (torch.zeros(8),), "element type fp16 differs"),
    (wide_offsets, (torch.zeros(8), 3), "must be int32 scalars"),
    (bad_order, (torch.zeros(64),), "permutation"),
    (bad_dimension, (torch.zeros(64),), "dimension 2 is out of range"),
])
def test_misuse_is_a_compile_error(kernel, args, message):
    with pytest.raises(CompilationError, match=message):
        kernel[(1,)](*args)
