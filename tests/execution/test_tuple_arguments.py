"""Tuples and named tuples as kernel arguments, as Triton accepts them: each element is specialized
on its own and the kernel indexes the tuple."""
from __future__ import annotations

from typing import NamedTuple

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import LaunchError


@triton.jit
def _add_pair(ptrs, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(ptrs[0] + offs, mask=mask)
    y = tl.load(ptrs[1] + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_a_tuple_of_tensors():
    x, y = torch.randn(100), torch.randn(100)
    out = torch.empty(100)
    _add_pair[(4,)]((x, y), out, 100, BLOCK=32)
    assert torch.equal(out, x + y)


class Scaled(NamedTuple):
    ptr: object
    scale: float
    shift: int


@triton.jit
def _scaled_copy(src: Scaled, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src.ptr + offs, mask=mask)
    tl.store(dst + offs, x * src.scale + src.shift, mask=mask)


def test_a_named_tuple_with_fields_of_every_kind():
    x = torch.randn(50)
    out = torch.empty(50)
    _scaled_copy.cache.clear()  # count this backend's compilations only
    _scaled_copy[(1,)](Scaled(x, 2.5, 3), out, 50, BLOCK=64)
    assert torch.equal(out, x * 2.5 + 3)
    _scaled_copy[(1,)](Scaled(x, 2.5, 1), out, 50, BLOCK=64)  # shift == 1: compiled in as a constant
    assert torch.equal(out, x * 2.5 + 1)
    assert len(_scaled_copy.cache) == 2


@triton.jit
def _nested(t, out_ptr):
    a = tl.load(t[0])
    b = tl.load(t[1][0]) * t[1][1]
    tl.store(out_ptr, a + b)


def test_nested_tuples_and_the_ir_parameters_they_become():
    a, b = torch.tensor([1.5]), torch.tensor([2.0])
    out = torch.empty(1)
    _nested[(1,)]((a, (b, 4.0)), out)
    assert out.item() == 1.5 + 2.0 * 4.0
    kernel = _nested.warmup((a, (b, 4.0)), out, grid=(1,))
    assert kernel.ir.arg_names == ["t.0", "t.1.0", "t.1.1", "out_ptr"]
    assert "%t.1.1: fp32" in str(kernel.ir)


def test_a_different_tuple_length_compiles_again_and_a_wrong_value_is_refused():
    x, y = torch.randn(8), torch.randn(8)
    out = torch.empty(8)
    kernel = _add_pair.warmup((x, y), out, 8, BLOCK=8, grid=(1,))
    with pytest.raises(LaunchError, match="compiled as a tuple of 2 elements"):
        kernel[(1,)](x, out, 8)
    with pytest.raises(LaunchError, match="element 1 of the tuple"):
        _add_pair[(1,)]((x, "no"), out, 8, BLOCK=8)
