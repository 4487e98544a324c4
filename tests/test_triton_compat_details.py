"""Small compatibilities Triton's own test suite relies on."""
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def doubled_block(out_ptr, BLOCK: tl.constexpr):
    TWICE: tl.constexpr = tl.constexpr(BLOCK * 2)
    tl.store(out_ptr + tl.arange(0, TWICE), tl.arange(0, TWICE))


def test_constexpr_constructed_inside_a_kernel():
    out = torch.zeros(8, dtype=torch.int32)
    doubled_block[(1,)](out, BLOCK=4)
    assert out.tolist() == list(range(8))


def test_pointer_type_alias():
    assert tl.pi32_t == tl.pointer_type(tl.int32)


@triton.jit
def erf_of_half(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.math.erf(x))


def test_compilation_error_keeps_the_original_error_as_its_cause():
    with pytest.raises(triton.CompilationError) as info:
        erf_of_half[(1,)](torch.zeros(4, dtype=torch.float16), BLOCK=4)
    assert isinstance(info.value.__cause__, ValueError)
    assert "Expected dtype ['fp32', 'fp64'] but got fp16" in str(info.value.__cause__)
    assert info.value.__cause__.__traceback__ is None  # tritium's own frames are not shown
