"""A kernel's numbers and loop variables are tensors where Triton's are: a number assigned to a
variable has the tensor methods (`acc = 0; acc.to(tl.int64)`, as in Triton's test_for_iv), and a
`for` loop's induction variable is a tensor of the bounds' type."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _sum_of_range(out_ptr, lo, hi, STEP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)  # a number assigned to a variable is a tensor here, as in Triton
    for i in range(lo, hi, STEP):
        acc += i.to(tl.int64)
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("lo,hi,step", [(2**35, 2**35 + 20, 3), (15, -16, -2), (22, 18, -1)])
def test_int64_sum_over_a_range_with_an_assigned_number_converted_first(backend, lo, hi, step):
    out = torch.zeros(1, dtype=torch.int64)
    _sum_of_range[(1,)](out, lo, hi, STEP=step)
    assert out.item() == sum(range(lo, hi, step))


@triton.jit
def _number_attributes(out_ptr, N: tl.constexpr):
    one = 1
    half = 0.5
    flag = True
    tl.static_assert(one.dtype == tl.int32 and half.dtype == tl.float32 and flag.dtype == tl.int1)
    for i in range(N):
        tl.static_assert(i.dtype == tl.int32)
        tl.store(out_ptr + i, i.to(tl.float32) * half + one.to(tl.float16) + flag.to(tl.float32))


def test_numbers_and_induction_variables_have_tensor_methods(backend):
    out = torch.zeros(4)
    _number_attributes[(1,)](out, N=4)
    assert out.tolist() == [i * 0.5 + 2 for i in range(4)]


@triton.jit
def _induction_type(out_ptr, lo):
    for i in range(lo, lo + 2):
        tl.static_assert(i.dtype == tl.int64)  # a bound is int64, so is the induction variable
        tl.store(out_ptr + (i - lo), i.to(tl.float64))


def test_an_int64_bound_makes_an_int64_induction_variable(backend):
    out = torch.zeros(2, dtype=torch.float64)
    _induction_type[(1,)](out, 2**40)
    assert out.tolist() == [2.0**40, 2.0**40 + 1]
