"""tritium.ops.gelu: exact and tanh GELU against torch.nn.functional.gelu, forward and backward."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
import tritium.ops
from ops_helpers import check_against_torch, gradcheck, non_uniform_grad, tolerance

F = torch.nn.functional
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_matches_torch(approximate, dtype):
    torch.manual_seed(0)
    x = (torch.randn(3, 1111) * 3).to(dtype)  # 3333 elements: four programs, the last one masked
    check_against_torch(lambda t: tritium.ops.gelu(t, approximate),
                        lambda t: F.gelu(t, approximate=approximate), [x])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradcheck_fp64(approximate):
    gradcheck(lambda t: tritium.ops.gelu(t, approximate), torch.randn(4, 5) * 2)


def test_gelu_fp64_is_exact_to_rounding():
    x = torch.linspace(-8, 8, 2001, dtype=torch.float64)
    torch.testing.assert_close(tritium.ops.gelu(x), F.gelu(x), atol=1e-15, rtol=1e-14)
    torch.testing.assert_close(tritium.ops.gelu(x, "tanh"), F.gelu(x, approximate="tanh"), atol=1e-15, rtol=1e-14)


def test_gelu_any_shape_and_layout():
    x = torch.randn(6, 50, 7).transpose(0, 2)  # not contiguous
    check_against_torch(tritium.ops.gelu, F.gelu, [x])
    check_against_torch(tritium.ops.gelu, F.gelu, [torch.randn(1)])
    assert tritium.ops.gelu(torch.randn(0, 3)).shape == (0, 3)


def test_gelu_rejects_bad_arguments():
    with pytest.raises(ValueError, match="approximate"):
        tritium.ops.gelu(torch.randn(3), approximate="fast")
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        tritium.ops.gelu(torch.arange(3))


# The chain-rule trap of chapter 16: a backward that returns gelu'(x) instead of grad_y * gelu'(x).
@triton.jit
def _backward_forgets_grad_output(grad_y_ptr, x_ptr, grad_x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    local = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * tl.exp(-0.5 * x * x)
    tl.store(grad_x_ptr + offsets, local, mask=mask)


class _BuggyGELU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tritium.ops.gelu(x.detach())

    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        _backward_forgets_grad_output[(triton.cdiv(x.numel(), 1024),)](grad_y, x, grad_x, x.numel(), BLOCK=1024)
        return grad_x


def test_a_backward_that_forgets_grad_output_passes_with_ones_and_fails_here():
    x = torch.randn(2000, requires_grad=True)
    _BuggyGELU.apply(x).sum().backward()  # grad_output = 1 everywhere: the bug is invisible
    xr = x.detach().clone().requires_grad_()
    F.gelu(xr).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, **tolerance(torch.float32))
    with pytest.raises(AssertionError, match="gradient of input 0"):
        check_against_torch(_BuggyGELU.apply, F.gelu, [torch.randn(2000)])
    assert non_uniform_grad(torch.empty(100)).unique().numel() == 100
