"""Tensor descriptors: ``tl.make_tensor_descriptor`` inside kernels and host-side
``TensorDescriptor`` arguments, checked against torch slicing (lanes outside the tensor read 0 or
NaN and are not written, as a GPU's TMA unit does)."""
import sys

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium import compat
from tritium.errors import CompilationError
from tritium.tools.tensor_descriptor import TensorDescriptor


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _tile(x, row, col, bm, bn, fill=0.0):
    """The (bm, bn) tile of 2-D ``x`` at (row, col), ``fill`` outside ``x``."""
    out = torch.full((bm, bn), fill)
    for i in range(bm):
        for j in range(bn):
            if 0 <= row + i < x.shape[0] and 0 <= col + j < x.shape[1]:
                out[i, j] = x[row + i, col + j]
    return out


@triton.jit
def scale_tiles(x_ptr, y_ptr, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [stride_x, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[stride_y, 1], block_shape=[BM, BN])
    tl.static_assert(src.block_shape[1] == BN)
    dst.store([pm * BM, pn * BN], src.load([pm * BM, pn * BN]) * 3)


def test_device_side_descriptors_on_a_ragged_shape():
    big = _randn(40, 48)
    x = big[:37, :45]  # a view: rows of 48 elements, 37 x 45 of them in use
    y = torch.full((37, 48), -1.0)
    scale_tiles[(3, 3)](x, y, 37, 45, x.stride(0), y.stride(0), BM=16, BN=16)
    assert torch.equal(y[:, :45], 3 * x)
    assert torch.equal(y[:, 45:], torch.full((37, 3), -1.0))  # past the shape: never written


@triton.jit
def read_tile(desc, out_ptr, row, col, BM: tl.constexpr, BN: tl.constexpr):
    tile = desc.load([row, col])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, tile)


@pytest.mark.parametrize("row,col", [(0, 0), (-5, 3), (9, -4), (14, 30), (-20, 0)])
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_host_descriptor_reads_zero_or_nan_outside_the_tensor(row, col, padding):
    x = _randn(20, 36, seed=1)
    out = torch.zeros(8, 8)
    desc = TensorDescriptor.from_tensor(x, [8, 8], padding=padding)
    read_tile[(1,)](desc, out, row, col, BM=8, BN=8)
    fill = float("nan") if padding == "nan" else 0.0
    np.testing.assert_array_equal(out.numpy(), _tile(x, row, col, 8, 8, fill).numpy())


@triton.jit
def matmul_descriptors(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pm * BM, k])
        b = b_desc.load([k, pn * BN])
        acc = tl.dot(a, b, acc, input_precision="ieee")
    c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


def test_matmul_through_host_descriptors():
    M, N, K = 40, 56, 40  # K is not a multiple of BK: the last loads are partly outside a and b
    a, b = _randn(M, K, seed=2).half(), _randn(K, N, seed=3).half()
    c = torch.zeros(M, N, dtype=torch.float16)
    descs = (TensorDescriptor.from_tensor(a, [16, 16]), TensorDescriptor.from_tensor(b, [16, 32]),
             TensorDescriptor.from_tensor(c, [16, 32]))
    matmul_descriptors[(3, 2)](*descs, K, BM=16, BN=32, BK=16)
    expected = (a.double() @ b.double()).half()
    torch.testing.assert_close(c, expected, rtol=2e-3, atol=2e-3)


@triton.jit
def first_tile(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, desc.load([0, 0]).to(tl.float32))


def test_host_descriptor_specializes_on_block_shape_and_dtype():
    x = _randn(16, 16, seed=4)
    out = torch.zeros(16, 16)
    first_tile.cache.clear()  # count this backend's compilations only
    kernel = first_tile[(1,)](TensorDescriptor.from_tensor(x, [8, 8]), out, BM=8, BN=8)
    # the base's alignment and the shape and strides that are multiples of 16 are facts of the IR
    ttir = kernel.asm["ttir"]
    for part, ty in (("base", "ptr<fp32>"), ("shape0", "i32"), ("shape1", "i32"), ("stride0", "i64")):
        assert f"%desc.{part}: {ty} {{divisibility=16}}" in ttir
    first_tile[(1,)](TensorDescriptor.from_tensor(x.flip(0) + 1, [8, 8]), out, BM=8, BN=8)
    assert len(first_tile.cache) == 1  # another tensor of the same kind: no recompilation
    # a shape that is no multiple of 16: another specialization, as an integer argument's would be
    kernel = first_tile[(1,)](TensorDescriptor.from_tensor(x[:12, :12] + 1, [8, 8]), out, BM=8, BN=8)
    assert torch.equal(out.flatten()[:64].view(8, 8), x[:8, :8] + 1)
    assert "%desc.shape0: i32," in kernel.asm["ttir"]
    assert len(first_tile.cache) == 2
    first_tile[(1,)](TensorDescriptor.from_tensor(x, [16, 16]), out, BM=16, BN=16)
    assert torch.equal(out, x)
    first_tile[(1,)](TensorDescriptor.from_tensor(x.half(), [16, 16]), out, BM=16, BN=16)
    assert torch.equal(out, x.half().float())
    assert len(first_tile.cache) == 4


@triton.jit
def sum_rows_3d(desc, out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """out[b, m] = sum over n of the (B, M, N) descriptor tile at (0, 0, 0)."""
    tile = desc.load([0, 0, 0])
    offs = tl.arange(0, B)[:, None] * M + tl.arange(0, M)[None, :]
    tl.store(out_ptr + offs, tl.sum(tile, axis=2))


def test_three_dimensional_descriptor():
    x = _randn(3, 5, 12, seed=5)
    out = torch.zeros(4, 8)
    sum_rows_3d[(1,)](TensorDescriptor.from_tensor(x, [4, 8, 16]), out, B=4, M=8, N=16)
    expected = torch.zeros(4, 8)
    expected[:3, :5] = x.sum(2)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


@triton.jit
def copy_1d(x_desc, y_desc, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    y_desc.store([pid * BLOCK], x_desc.load([pid * BLOCK]) + 1)


def test_one_dimensional_descriptors_of_int32():
    x = torch.arange(50, dtype=torch.int32)
    y = torch.zeros(50, dtype=torch.int32)
    copy_1d[(4,)](TensorDescriptor.from_tensor(x, [16]), TensorDescriptor.from_tensor(y, [16]), BLOCK=16)
    assert torch.equal(y, x + 1)


def test_importable_as_triton_tools_tensor_descriptor():
    compat.install()
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor as Aliased

        assert Aliased is TensorDescriptor
    finally:
        sys.meta_path.remove(compat._FINDER)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]


# errors -------------------------------------------------------------------------------------------
@triton.jit
def strided_last_dim(x_ptr, n):
    desc = tl.make_tensor_descriptor(x_ptr, [n, n], [1, n], [8, 8])
    desc.load([0, 0])


@triton.jit
def narrow_block(x_ptr, n):
    desc = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [8, 2])
    desc.load([0, 0])


@triton.jit
def wrong_offsets(x_ptr, n):
    desc = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [8, 8])
    desc.load([0])


@pytest.mark.parametrize("kernel,message", [
    (strided_last_dim, "last stride must be 1"),
    (narrow_block, "at least 16 bytes in the last dimension"),
    (wrong_offsets, "2 dimensions but 1 offsets"),
])
def test_device_descriptor_misuse_is_a_compile_error(kernel, message):
    with pytest.raises(CompilationError, match=message):
        kernel[(1,)](torch.zeros(64), 8)


def test_host_descriptor_checks():
    x = torch.zeros(16, 20)
    with pytest.raises(ValueError, match="16-byte aligned"):
        TensorDescriptor.from_tensor(x[:, 1:], [8, 8])  # starts 4 bytes into x
    with pytest.raises(ValueError, match="strides must be 16-byte aligned"):
        TensorDescriptor.from_tensor(torch.zeros(16, 18), [8, 8])  # rows of 72 bytes
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor.from_tensor(torch.zeros(16, 32)[:, ::2], [8, 8])
    with pytest.raises(ValueError, match="power of 2"):
        TensorDescriptor.from_tensor(torch.zeros(16, 16), [8, 6])


@triton.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    # the helper of Triton's fused-attention tutorial: a descriptor passes through, a pointer gets one
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@triton.jit
def add_one(x, y, M, N: tl.constexpr, BM: tl.constexpr):
    pid = tl.program_id(0)
    x = _maybe_make_tensor_desc(x, [M, N], [N, 1], [BM, N])
    y = _maybe_make_tensor_desc(y, [M, N], [N, 1], [BM, N])
    y.store([pid * BM, 0], x.load([pid * BM, 0]) + 1.0)


@pytest.mark.parametrize("host_x,host_y", [(True, False), (False, True), (True, True)])
def test_descriptor_or_pointer_arguments(host_x, host_y):
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8))
    x = _randn(20, 16, seed=8)
    y = torch.zeros(20, 16)
    add_one[(3,)](TensorDescriptor.from_tensor(x, [8, 16]) if host_x else x,
                  TensorDescriptor.from_tensor(y, [8, 16]) if host_y else y, 20, N=16, BM=8)
    assert torch.equal(y, x + 1)


@triton.jit
def _store_fp32_tiles(x_ptr, y_ptr, n, BLOCK: tl.constexpr, OUT: tl.constexpr):
    pid = tl.program_id(0)
    dst = tl.make_tensor_descriptor(y_ptr, [n], [1], [BLOCK])
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK), mask=pid * BLOCK + tl.arange(0, BLOCK) < n)
    tl.static_assert(x.dtype == tl.float32 and dst.dtype == OUT)
    dst.store([pid * BLOCK], x * 1.0)  # fp32 into the descriptor's dtype: converted, as Triton does


@pytest.mark.parametrize("dtype,element", [(torch.bfloat16, tl.bfloat16), (torch.float16, tl.float16)])
def test_descriptor_store_converts_the_value_to_the_descriptors_dtype(dtype, element):
    """Triton casts a stored value to the descriptor's dtype (round to nearest even): the oracle is
    torch's conversion of the same fp32 values, halfway cases included."""
    x = _randn(200, seed=5) * 100
    bits = x.view(torch.int32)
    x[::4] = (bits[::4] & ~0xFFFF | 0x8000).view(torch.float32)  # exact bf16 ties
    y = torch.full((200,), -1.0, dtype=dtype)
    _store_fp32_tiles[(triton.cdiv(200, 64),)](x, y, 200, BLOCK=64, OUT=element)
    assert torch.equal(y.view(torch.int16), x.to(dtype).view(torch.int16))


@triton.jit
def _store_fp32_through_host_descriptor(y_desc, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    y_desc.store([pid * BLOCK, 0], tl.full((BLOCK, 8), 1.0, tl.float32) / 3.0)


def test_host_descriptor_store_converts_fp32_to_bf16():
    y = torch.zeros(16, 8, dtype=torch.bfloat16)
    _store_fp32_through_host_descriptor[(2,)](TensorDescriptor.from_tensor(y, [8, 8]), BLOCK=8)
    assert torch.equal(y, torch.full((16, 8), 1.0 / 3.0, dtype=torch.float32).to(torch.bfloat16))
