"""Kernels the fuzzers found wrong, reduced to what went wrong, each checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _both_branches_bind_one_value(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if tl.program_id(0) == 0:
        y = x.to(tl.float32)  # x is fp32 already: both branches bind the value x itself
    else:
        y = x.to(tl.float32)
    if tl.program_id(0) >= 0:
        z = y * 2
    else:
        z = x
    tl.store(out_ptr + offs, z)


def test_a_name_both_branches_bind_to_one_earlier_value_is_defined_after_the_if(backend):
    # found by the differential fuzzer: "name 'y' is not defined" at the second `if`
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    _both_branches_bind_one_value[(1,)](x, out, BLOCK=8)
    assert out.tolist() == (np.arange(8) * 2.0).tolist()


@triton.jit
def _defines_a_function(x_ptr):
    def inner(v):  # ERR
        return v
    tl.store(x_ptr, inner(tl.load(x_ptr)))


def test_a_nested_function_definition_says_so():
    # found by the frontend fuzzer: the body was compiled inline ("name 'v' is not defined")
    with pytest.raises(triton.CompilationError) as info:
        _defines_a_function[(1,)](torch.zeros(1))
    message = str(info.value)
    assert "nested function definitions are not supported in kernels" in message
    assert "def inner(v):  # ERR" in message and "@triton.jit" in message
