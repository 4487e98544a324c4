"""What ``tl.multiple_of`` and ``tl.max_contiguous`` promise, as Triton defines them, and that the
run-time check accepts every true promise and rejects false ones.

Triton's definition: along each dimension a block's values fall into contiguous groups (runs of
consecutive integers, aligned at multiples of the run length); ``multiple_of(x, v)`` says the
first element of every group is a multiple of ``v`` (every element, where values are not
contiguous). For pointers the multiple is of the byte address, contiguity is in elements. The
oracle for each case is the arithmetic on the offsets (or ``data_ptr()``) done here in numpy.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import HintViolationError


@triton.jit
def _aligned_run_copy(x_ptr, out_ptr, off_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + tl.load(off_ptr)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


@pytest.mark.parametrize("start", [0, 32, 64])
def test_a_contiguous_run_starting_at_a_multiple_satisfies_the_hint(start):
    x = torch.randn(128)
    out = torch.zeros(32)
    _aligned_run_copy[(1,)](x, out, torch.tensor([start], dtype=torch.int32), BLOCK=32)
    assert torch.equal(out, x[start:start + 32])


@pytest.mark.parametrize("start", [1, 16, 31])
def test_a_contiguous_run_starting_off_the_multiple_violates_it(start):
    x = torch.randn(128)
    with pytest.raises(HintViolationError, match=r"multiple_of\(\[32\]\)"):
        _aligned_run_copy[(1,)](x, torch.zeros(32), torch.tensor([start], dtype=torch.int32), BLOCK=32)


@triton.jit
def _runs_of_four(x_ptr, out_ptr, GAP: tl.constexpr, V: tl.constexpr):
    i = tl.arange(0, 8)
    offs = tl.multiple_of(i + (i // 4) * GAP, V)  # two runs of 4: [0..3] and [4+GAP..7+GAP]
    tl.store(out_ptr + i, tl.load(x_ptr + offs))


@pytest.mark.parametrize("gap,v", [(4, 4), (4, 8), (4, 16), (12, 16), (12, 32), (8, 4), (9, 1), (9, 2)])
def test_every_run_start_is_checked(gap, v):
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(8)
    i = np.arange(8)
    offs = i + (i // 4) * gap
    starts = offs[[0, 4]]  # gap > 0: two runs of four
    if np.all(starts % v == 0):
        _runs_of_four[(1,)](x, out, GAP=gap, V=v)
        assert out.tolist() == offs.astype(np.float32).tolist()
    else:
        with pytest.raises(HintViolationError):
            _runs_of_four[(1,)](x, out, GAP=gap, V=v)


@triton.jit
def _tile_offsets(x_ptr, out_ptr, stride, V0: tl.constexpr, V1: tl.constexpr):
    rows = tl.arange(0, 4)
    cols = tl.arange(0, 16)
    offs = tl.multiple_of(rows[:, None] * stride + cols[None, :], [V0, V1])
    tl.store(out_ptr + rows[:, None] * 16 + cols[None, :], tl.load(x_ptr + offs))


def test_per_dimension_values_follow_each_dimensions_groups():
    x = torch.arange(4 * 64, dtype=torch.float32)
    out = torch.zeros(4, 16)
    # rows are 32 apart, each row one run of 16 starting at a multiple of 32
    _tile_offsets[(1,)](x, out, 32, V0=1, V1=32)
    expected = (torch.arange(4)[:, None] * 32 + torch.arange(16)[None, :]).float()
    assert torch.equal(out, expected)
    # along dimension 0 no element is contiguous with the next: every element must be a multiple,
    # and the element at (0, 1) is 1
    with pytest.raises(HintViolationError):
        _tile_offsets[(1,)](x, out, 32, V0=16, V1=16)
    # rows 24 apart start at 0, 24, 48, 72: multiples of 8 but not of 16
    _tile_offsets[(1,)](x, out, 24, V0=1, V1=8)
    with pytest.raises(HintViolationError):
        _tile_offsets[(1,)](x, out, 24, V0=1, V1=16)


@triton.jit
def _pointer_hints(x_ptr, out_ptr, STEP: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr):
    p = x_ptr + tl.arange(0, BLOCK) * STEP
    p = tl.max_contiguous(tl.multiple_of(p, ALIGN), BLOCK if STEP == 1 else 1)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p))


def test_pointer_contiguity_counts_elements_and_alignment_counts_bytes():
    storage = torch.randn(256)
    out = torch.zeros(16)
    base = storage.data_ptr()
    assert base % 64 == 0  # torch's CPU allocator aligns storage
    _pointer_hints[(1,)](storage, out, STEP=1, ALIGN=64, BLOCK=16)
    assert torch.equal(out, storage[:16])
    shifted = storage[1:]  # 4 bytes past an aligned address
    assert shifted.data_ptr() % 16 == 4
    _pointer_hints[(1,)](shifted, out, STEP=1, ALIGN=4, BLOCK=16)
    assert torch.equal(out, storage[1:17])
    with pytest.raises(HintViolationError, match="multiple_of"):
        _pointer_hints[(1,)](shifted, out, STEP=1, ALIGN=16, BLOCK=16)


@triton.jit
def _claims_contiguous(x_ptr, out_ptr, STEP: tl.constexpr, BLOCK: tl.constexpr):
    p = tl.max_contiguous(x_ptr + tl.arange(0, BLOCK) * STEP, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_max_contiguous_on_pointers(dtype):
    x = torch.arange(64, dtype=dtype)
    out = torch.zeros(16, dtype=dtype)
    _claims_contiguous[(1,)](x, out, STEP=1, BLOCK=16)
    assert torch.equal(out, x[:16])
    with pytest.raises(HintViolationError, match="max_contiguous"):
        _claims_contiguous[(1,)](x, out, STEP=2, BLOCK=16)
