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


@triton.jit
def expand_many(out_ptr):
    x = tl.arange(0, 4)
    y = tl.expand_dims(x, (-4, 2, -1))  # negative axes count from the end of the rank-4 result
    tl.static_assert(y.shape[0] == 1 and y.shape[1] == 4 and y.shape[2] == 1 and y.shape[3] == 1)
    tl.store(out_ptr + tl.reshape(y, (4,)) * 0 + tl.arange(0, 4), tl.reshape(y, (4,)))


def test_expand_dims_with_several_axes_numbers_them_in_the_result():
    out = torch.zeros(4, dtype=torch.int32)
    expand_many[(1,)](out)
    assert out.tolist() == [0, 1, 2, 3]
