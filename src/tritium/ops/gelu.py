"""GELU, exact (erf) and tanh-approximated, forward and backward: ``tritium.ops.gelu(x, approximate=...)``.

The backward kernel returns the vector-Jacobian product ``grad_output * gelu'(x)``, not the local
derivative alone: chapter 16's chain-rule trap, which ``y.sum().backward()`` (grad_output all ones)
cannot see. The tests drive it with a non-uniform grad_output.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from . import activations
from ._common import ELEMENTWISE_BLOCK, check_float, compute_dtype


@triton.jit
def gelu_forward_kernel(x_ptr, y_ptr, n, APPROXIMATE_TANH: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
    if APPROXIMATE_TANH:
        y = activations.gelu_tanh(x)
    else:
        y = activations.gelu_exact(x)
    tl.store(y_ptr + offsets, y, mask=mask)


@triton.jit
def gelu_backward_kernel(grad_y_ptr, x_ptr, grad_x_ptr, n, APPROXIMATE_TANH: tl.constexpr, ACC: tl.constexpr,
                         BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
    grad_y = tl.load(grad_y_ptr + offsets, mask=mask, other=0.0).to(ACC)
    if APPROXIMATE_TANH:
        local = activations.gelu_tanh_grad(x)
    else:
        local = activations.gelu_exact_grad(x)
    tl.store(grad_x_ptr + offsets, grad_y * local, mask=mask)  # the chain rule: grad_y times gelu'(x)


def _approximate(approximate: str) -> bool:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"tritium.ops.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return approximate == "tanh"


def gelu_forward(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """``gelu(x)`` by a kernel, without autograd."""
    check_float(x, "gelu")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    gelu_forward_kernel[(triton.cdiv(n, ELEMENTWISE_BLOCK),)](
        x, y, n, APPROXIMATE_TANH=_approximate(approximate), ACC=compute_dtype(x.dtype), BLOCK=ELEMENTWISE_BLOCK)
    return y


def gelu_backward(grad_y: torch.Tensor, x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """``grad_y * gelu'(x)`` by a kernel."""
    x = x.contiguous()
    grad_y = grad_y.contiguous().to(x.dtype)
    grad_x = torch.empty_like(x)
    n = x.numel()
    gelu_backward_kernel[(triton.cdiv(n, ELEMENTWISE_BLOCK),)](
        grad_y, x, grad_x, n, APPROXIMATE_TANH=_approximate(approximate), ACC=compute_dtype(x.dtype),
        BLOCK=ELEMENTWISE_BLOCK)
    return grad_x


class GELUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, approximate="none"):
        ctx.approximate = approximate
        ctx.save_for_backward(x)
        return gelu_forward(x, approximate)

    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        return gelu_backward(grad_y, x, ctx.approximate), None


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU of ``x`` (any shape): ``x * Phi(x)``, or with ``approximate="tanh"`` the tanh form, as
    ``torch.nn.functional.gelu``. Differentiable."""
    _approximate(approximate)
    check_float(x, "gelu")
    return GELUFunction.apply(x, approximate)
