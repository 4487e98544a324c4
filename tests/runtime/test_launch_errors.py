"""Launch mistakes are LaunchErrors that name what is wrong and where."""
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_an_argument_of_the_wrong_kind_is_named():
    with pytest.raises(triton.LaunchError, match="argument 'x_ptr': cannot pass a list"):
        copy_kernel[(1,)]([1.0, 2.0], torch.zeros(2), 2, BLOCK=2)


@pytest.mark.parametrize("grid", [(1.5,), ("2",), (1, 2, 3, 4)])
def test_a_grid_that_is_not_up_to_three_integers_is_refused(grid):
    with pytest.raises(triton.LaunchError, match="grid"):
        copy_kernel[grid](torch.zeros(4), torch.zeros(4), 4, BLOCK=4)


def test_integer_like_grid_dimensions_are_accepted():
    x, out = torch.arange(8.0), torch.zeros(8)
    copy_kernel[(np.int64(2), torch.tensor(1))](x, out, 8, BLOCK=4)
    assert torch.equal(out, x)


# Where Triton raises a Python exception type that user code catches, tritium's error is one too (and
# still a LaunchError naming the launch line).
@triton.jit
def _count(value, out_ptr):
    tl.store(out_ptr, tl.load(out_ptr) + 1)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1])
def test_an_integer_argument_past_64_bits_is_an_overflow_error(value):
    """Triton's test_value_specialization_overflow: 2**64 - 1 and -2**63 fit, one past them does not."""
    out = torch.zeros(1)
    _count[(1,)](2**64 - 1 if value > 0 else -(2**63), out)  # the extremes launch
    for attempt in range(2):  # the generic path, then the cached fast path
        with pytest.raises(OverflowError, match=f"integer argument {value} does not fit in 64 bits") as info:
            _count[(1,)](value, out)
        assert isinstance(info.value, triton.LaunchError)
        assert f"{__file__}:" in str(info.value) and "argument 'value'" in str(info.value)
    assert out.item() == 1.0


def test_num_warps_not_a_power_of_two_is_an_assertion_error():
    with pytest.raises(AssertionError, match="num_warps must be a power of 2 .*, got 3") as info:
        copy_kernel[(1,)](torch.zeros(2), torch.zeros(2), 2, BLOCK=2, num_warps=3)
    assert isinstance(info.value, triton.LaunchError) and f"{__file__}:" in str(info.value)


def test_a_non_tensor_for_a_compiled_pointer_is_a_value_error():
    x, out = torch.arange(4.0), torch.zeros(4)
    compiled = copy_kernel.warmup(x, out, 4, BLOCK=4, grid=(1,))
    for wrong in (7, object()):
        with pytest.raises(ValueError, match=f"argument 'x_ptr' of copy_kernel was compiled as a pointer .*, but a "
                                             f"{type(wrong).__name__} was passed; pass a tensor") as info:
            compiled[(1,)](wrong, out, 4)
        assert isinstance(info.value, triton.LaunchError) and f"{__file__}:" in str(info.value)
    assert torch.equal(out, torch.zeros(4))  # nothing ran
