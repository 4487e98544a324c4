"""Compile errors whose wording code written for Triton matches on.

Suites and libraries built on Triton check a few of its messages (``pytest.raises(..., match=)``
or a substring of ``__cause__``); these tests pin the phrases tritium shares with it, and that the
cause stays the plain Python exception (ValueError, IndexError) that carries the message.
"""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, InterpreterError


@triton.jit
def _slice_with_a_start(x_ptr):
    x_ptr[3:]


def test_a_slice_with_bounds_is_an_unsupported_tensor_index():
    with pytest.raises(triton.TritonError, match="unsupported tensor index") as info:
        _slice_with_a_start[(1,)](torch.zeros(8))
    assert isinstance(info.value.__cause__, IndexError)
    assert "slice(3, None, None)" in str(info.value)


@triton.jit
def _expand_past_the_end(N: tl.constexpr):
    x = tl.arange(0, N)
    tl.expand_dims(x, 2)  # the result has rank 2: axes -2..1


@triton.jit
def _expand_before_the_start(N: tl.constexpr):
    x = tl.arange(0, N)
    tl.expand_dims(x, (0, -4))  # rank 3: axes -3..2


@triton.jit
def _expand_a_scalar_past_the_end(N: tl.constexpr):
    s = tl.sum(tl.arange(0, N))
    tl.expand_dims(s, 1)  # rank 1: axes -1..0


@pytest.mark.parametrize("kernel,axis,low,high", [
    (_expand_past_the_end, 2, -2, 2),
    (_expand_before_the_start, -4, -3, 3),
    (_expand_a_scalar_past_the_end, 1, -1, 1),
])
def test_expand_dims_names_the_invalid_axis_and_the_valid_range(kernel, axis, low, high):
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](N=8)
    cause = info.value.__cause__
    assert isinstance(cause, ValueError)
    assert f"invalid axis {axis}. Expected {low} <= axis < {high}" in str(cause)


@triton.jit
def _expand_twice_at_one_place(N: tl.constexpr, A: tl.constexpr, B: tl.constexpr):
    tl.expand_dims(tl.arange(0, N), (A, B))


@pytest.mark.parametrize("a,b,normalized", [(0, 0, [0, 0]), (1, -2, [1, 1]), (2, -1, [2, 2])])
def test_expand_dims_reports_duplicate_axes_after_normalizing_them(a, b, normalized):
    with pytest.raises(CompilationError) as info:
        _expand_twice_at_one_place[(1,)](N=8, A=a, B=b)
    assert f"expand_dims received duplicate axes, normalized axes = {normalized}" in str(info.value.__cause__)


@triton.jit
def _narrow_descriptor_load(ptr):
    desc = tl.make_tensor_descriptor(ptr, [64, 64], [64, 1], [4, 2])
    desc.load([0, 0])


@triton.jit
def _narrow_descriptor_store(ptr):
    desc = tl.make_tensor_descriptor(ptr, [64, 64], [64, 1], [2, 4])
    desc.store([0, 0], tl.zeros([2, 4], dtype=tl.int16))


@pytest.mark.parametrize("kernel,dtype,got", [
    (_narrow_descriptor_load, torch.int32, "2 * 4 = 8 bytes"),
    (_narrow_descriptor_store, torch.int16, "4 * 2 = 8 bytes"),
])
def test_a_descriptor_narrower_than_16_bytes_is_rejected_in_tritons_words(kernel, dtype, got):
    with pytest.raises(InterpreterError) as info:
        kernel[(1,)](torch.zeros((64, 64), dtype=dtype))
    message = str(info.value.__cause__)
    assert message.startswith("Descriptor block shape must have at least 16 bytes in the last dimension"), message
    assert got in message
