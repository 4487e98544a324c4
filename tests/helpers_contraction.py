"""The kernel of the contraction tests (tests/execution/test_fp_contraction.py on every backend,
tests/backends/cuda/test_cuda_contraction.py in the CUDA backend's PTX): fp32 expressions of
multiplies and adds, one per CASE."""
from __future__ import annotations

import tritium as triton
import tritium.language as tl

BLOCK = 64
SCALAR_CASE = 14
CASES = tuple(range(SCALAR_CASE + 1))


@triton.jit
def expression_kernel(a_ptr, b_ptr, c_ptr, d_ptr, out_ptr, out2_ptr, CASE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    d = tl.load(d_ptr + offs)
    second = c
    if CASE == 0:
        r = a * b + c
    elif CASE == 1:
        r = a * b + c * d
    elif CASE == 2:  # one product, two sums: both fused
        m = a * b
        second = m + d
        r = m + c
    elif CASE == 3:
        r = a * b - c
    elif CASE == 4:
        r = c - a * b
    elif CASE == 5:
        r = (a * b) * c + d
    elif CASE == 6:
        r = a * 2.0 + b
    elif CASE == 7:
        r = a * b - c * d
    elif CASE == 8:  # the product also stored as it is
        m = a * b
        second = m
        r = m + c
    elif CASE == 9:
        r = (a * b + c) * d + a
    elif CASE == 10:
        r = a * b + c * d + a * d
    elif CASE == 11:
        r = a + b * c
    elif CASE == 12:
        r = -(a * b) + c
    elif CASE == 13:  # the product with more readers is the one left unfused
        m = a * b
        second = m
        r = m + c * d
    else:  # a product of scalars added to a block
        s = tl.load(a_ptr) * tl.load(b_ptr)
        r = c + s
    tl.store(out_ptr + offs, r)
    tl.store(out2_ptr + offs, second)
