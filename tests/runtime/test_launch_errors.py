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
