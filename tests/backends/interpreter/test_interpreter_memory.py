"""Loads and stores whose addresses are affine in the block indices take a strided-view fast path.

Each test uses an access pattern that exercises that path (reversed, transposed, reversed program
order, overlapping lanes, mixed tails) and checks the result against numpy indexing.
"""
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def reverse_within_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + (BLOCK - 1 - offs))
    tl.store(out_ptr + pid * BLOCK + offs, x)


def test_reversed_lanes_read_backwards():
    x = torch.arange(64, dtype=torch.float32)
    out = torch.empty_like(x)
    reverse_within_block[(4,)](x, out, BLOCK=16)
    assert torch.equal(out, x.view(4, 16).flip(1).reshape(-1))


@triton.jit
def reversed_program_order(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    last = tl.num_programs(0) - 1
    offs = (last - pid) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def test_programs_walking_backwards_through_memory():
    x = torch.arange(80, dtype=torch.int32)
    out = torch.empty_like(x)
    reversed_program_order[(5,)](x, out, BLOCK=16)
    assert torch.equal(out, x.view(5, 16).flip(0).reshape(-1))


@triton.jit
def transpose_tile(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], tl.trans(tile))


def test_transposed_store_and_load():
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    out = np.zeros((32, 16), dtype=np.float32)
    transpose_tile[(1,)](x, out, M=16, N=32)
    np.testing.assert_array_equal(out, x.T)


@triton.jit
def all_lanes_one_address(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs * 0, x)


def test_lanes_storing_to_one_address_leave_the_last_lane_s_value():
    # A GPU leaves one of the values; tritium is deterministic and keeps the last lane's.
    x = torch.arange(1, 17, dtype=torch.float32)
    out = torch.zeros(1)
    all_lanes_one_address[(1,)](x, out, BLOCK=16)
    assert out.item() == 16.0


@triton.jit
def masked_tail_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=-1.0) * 2, mask=mask)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000, 4096])
def test_masked_tails_in_many_programs(n):
    x = torch.randn(n)
    out = torch.full((n,), 7.0)
    masked_tail_copy[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    assert torch.equal(out, x * 2)


@triton.jit
def strided_rows(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row * BLOCK + cols, tl.load(x_ptr + row * stride + cols))


def test_row_stride_from_a_runtime_argument_over_a_view():
    base = torch.randn(12, 40)
    view = base[:, 3:35]  # rows of 32 out of 40, starting at column 3
    out = torch.empty(12, 32)
    strided_rows[(12,)](view, out, view.stride(0), BLOCK=32)
    assert torch.equal(out, view)


def test_reading_past_a_view_end_is_out_of_bounds_even_inside_its_storage():
    base = torch.randn(4, 40)
    view = base[:2]
    out = torch.empty(4, 32)
    with pytest.raises(triton.OutOfBoundsError) as info:
        strided_rows[(4,)](view, out, 40, BLOCK=32)
    assert info.value.program_id == (2, 0, 0) and info.value.offset == 80
