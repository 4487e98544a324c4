"""Softmax and log-softmax over the last dimension, forward and backward:
``tritium.ops.softmax(x)`` and ``tritium.ops.log_softmax(x)``.

One program per row, the whole row in one block (padded to a power of two; the padding lanes load
-inf so they add nothing). Both subtract the row's max before exponentiating, so large logits do
not overflow. The backward kernels use the saved output only:

* softmax:     ``grad_x = y * (grad_y - sum(grad_y * y))``
* log_softmax: ``grad_x = grad_y - exp(y) * sum(grad_y)``
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from ._common import check_float, compute_dtype, row_block, rows


@triton.jit
def softmax_forward_kernel(x_ptr, y_ptr, n_cols, LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row_start + cols, mask=mask, other=-float("inf")).to(ACC)
    shifted = x - tl.max(x, axis=0)
    exps = tl.exp(shifted)
    total = tl.sum(exps, axis=0)
    if LOG:
        y = shifted - tl.log(total)
    else:
        y = exps / total
    tl.store(y_ptr + row_start + cols, y, mask=mask)


@triton.jit
def softmax_backward_kernel(grad_y_ptr, y_ptr, grad_x_ptr, n_cols, LOG: tl.constexpr, ACC: tl.constexpr,
                            BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
    grad_y = tl.load(grad_y_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
    if LOG:
        grad_x = grad_y - tl.exp(y) * tl.sum(grad_y, axis=0)
    else:
        grad_x = y * (grad_y - tl.sum(grad_y * y, axis=0))
    tl.store(grad_x_ptr + row_start + cols, grad_x, mask=mask)


def softmax_forward(x: torch.Tensor, log: bool = False) -> torch.Tensor:
    x2 = rows(x)
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    softmax_forward_kernel[(n_rows,)](x2, y, n_cols, LOG=log, ACC=compute_dtype(x.dtype), BLOCK=row_block(n_cols))
    return y.reshape(x.shape)


def softmax_backward(grad_y: torch.Tensor, y: torch.Tensor, log: bool = False) -> torch.Tensor:
    y2 = rows(y)
    grad_y2 = rows(grad_y.to(y.dtype))
    grad_x = torch.empty_like(y2)
    n_rows, n_cols = y2.shape
    softmax_backward_kernel[(n_rows,)](grad_y2, y2, grad_x, n_cols, LOG=log, ACC=compute_dtype(y.dtype),
                                       BLOCK=row_block(n_cols))
    return grad_x.reshape(y.shape)


class SoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, log):
        y = softmax_forward(x, log)
        ctx.log = log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return softmax_backward(grad_y, y, ctx.log), None


def _check(x, op: str) -> None:
    check_float(x, op)
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"tritium.ops.{op}: x needs a non-empty last dimension, got shape {tuple(x.shape)}")


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of ``x`` (any shape), as ``torch.softmax(x, -1)``. Differentiable."""
    _check(x, "softmax")
    return SoftmaxFunction.apply(x, False)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the last dimension of ``x``, as ``torch.log_softmax(x, -1)``. Differentiable."""
    _check(x, "log_softmax")
    return SoftmaxFunction.apply(x, True)
