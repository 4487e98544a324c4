"""Tuples as Triton code uses them: tl.tuple, comprehensions over tuples, named tuples built in a
kernel and returned from helpers, and compile-time elements (constexprs, @jit functions) inside
tuple arguments. Oracles: the values computed here in Python."""
from __future__ import annotations

from typing import NamedTuple

import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _plus_one(values):
    return tl.tuple([v + 1 for v in values])


@triton.jit
def _store_each(ptrs, values):
    for i in tl.static_range(len(values)):
        tl.store(ptrs[i], values[i])


@triton.jit
def _comprehension_kernel(ptrs, values):
    _store_each(ptrs, _plus_one(values))


def test_a_comprehension_over_a_tuple_builds_a_tl_tuple(backend):
    for size in (0, 1, 3):
        values = tuple(float(i * 2) for i in range(size))
        outs = tuple(torch.zeros(1) for _ in values)
        _comprehension_kernel[(1,)](outs, values)
        assert [o.item() for o in outs] == [v + 1 for v in values]


@triton.jit
def _comprehension_forms(out_ptr):
    squares = [i * i for i in tl.static_range(4) if i != 2]
    pairs = [a + b for a, b in ((1, 2), (3, 4))]
    both = tl.tuple(squares) + tl.tuple(pairs)
    for i in tl.static_range(len(both)):
        tl.store(out_ptr + i, both[i])


def test_comprehension_forms(backend):
    out = torch.zeros(5, dtype=torch.int32)
    _comprehension_forms[(1,)](out)
    assert out.tolist() == [0, 1, 9, 3, 7]


class View(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


class Closure(NamedTuple):
    fn: tl.constexpr
    captured: tuple


@triton.jit
def _make_view(shape, ptr, stride):
    return View(shape=shape, ptr=ptr, stride=stride)  # a named tuple built in a helper


@triton.jit
def _scale(x, factor_ptr):
    return x * tl.load(factor_ptr)


@triton.jit
def _named_tuple_kernel(closure, src, dst, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    x_view = _make_view(src.shape, src.ptr, src.stride)
    inside = (rows < dst.shape[0]) & (cols < dst.shape[1])
    x = tl.load(x_view.ptr + rows * x_view.stride[0] + cols * x_view.stride[1], mask=inside, other=0)
    y = closure.fn(x, *closure.captured)  # a @jit function carried in a tuple argument
    tl.store(dst.ptr + rows * dst.stride[0] + cols * dst.stride[1], y, mask=inside)


def test_named_tuples_and_a_jit_function_inside_a_tuple_argument(backend):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 16, generator=gen)
    y = torch.zeros(8, 8)
    factor = torch.tensor([2.5])
    _named_tuple_kernel[(1,)](Closure(_scale, (factor,)), View(x, x.shape, x.stride()), View(y, y.shape, y.stride()),
                              BLOCK=16)
    assert torch.equal(y, x[:8, :8] * 2.5)


@triton.jit
def _constexpr_in_tuple(out_ptr, config):
    tl.static_assert(config[1] == 4)  # a tl.constexpr element is compiled in
    tl.store(out_ptr + tl.arange(0, config[1]), tl.load(config[0] + tl.arange(0, config[1])) * config[1])


def test_a_constexpr_element_of_a_tuple_argument_is_compiled_in(backend):
    x = torch.arange(4, dtype=torch.float32)
    out = torch.zeros(4)
    _constexpr_in_tuple[(1,)](out, (x, tl.constexpr(4)))
    assert out.tolist() == [0.0, 4.0, 8.0, 12.0]
    assert isinstance(tl.tuple([1, 2]), tuple) and tl.tuple((1, 2)) == (1, 2)
