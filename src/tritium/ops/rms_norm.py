"""RMS normalization over the last dimension, forward and backward, with the weight's gradient:
``tritium.ops.rms_norm(x, weight=None, eps=1e-6)``.

Forward: ``y = x * rstd * weight`` with ``rstd = 1 / sqrt(mean(x^2) + eps)``, one program per row;
``rstd`` is saved for the backward.

Backward, with ``xhat = x * rstd`` and ``g = grad_y * weight``:
``grad_x = rstd * (g - xhat * mean(g * xhat))`` and ``grad_weight = sum_rows(grad_y * xhat)``,
the latter summed in two stages through a (programs, N) partial buffer as in layer_norm.py.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from ._common import (
    accumulator_dtype, check_float, check_same_dtype, compute_dtype, partial_count, row_block, rows, sum_partials,
)


@triton.jit
def rms_norm_forward_kernel(x_ptr, weight_ptr, y_ptr, rstd_ptr, n_cols, eps, HAS_WEIGHT: tl.constexpr,
                            ACC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * rstd
    if HAS_WEIGHT:
        y = y * tl.load(weight_ptr + cols, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + row_start + cols, y, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def rms_norm_backward_kernel(grad_y_ptr, x_ptr, weight_ptr, rstd_ptr, grad_x_ptr, partial_w_ptr, n_rows, n_cols,
                             HAS_WEIGHT: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if HAS_WEIGHT:
        weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(ACC)
    grad_w = tl.zeros((BLOCK,), dtype=ACC)
    # a contiguous run of rows per program: the hardware prefetchers follow one stream through it
    rows_each = tl.cdiv(n_rows, programs)
    for row in range(pid * rows_each, tl.minimum(pid * rows_each + rows_each, n_rows)):
        row_start = row.to(tl.int64) * n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
        grad_y = tl.load(grad_y_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        if HAS_WEIGHT:
            g = grad_y * weight
        else:
            g = grad_y
        grad_x = rstd * (g - xhat * (tl.sum(g * xhat, axis=0) / n_cols))
        tl.store(grad_x_ptr + row_start + cols, grad_x, mask=mask)
        grad_w += grad_y * xhat
    if HAS_WEIGHT:
        tl.store(partial_w_ptr + pid * n_cols + cols, grad_w, mask=mask)


def rms_norm_forward(x, weight, eps):
    """(y, rstd) by a kernel."""
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    y = torch.empty_like(x2)
    rstd = torch.empty(n_rows, dtype=accumulator_dtype(x.dtype))
    rms_norm_forward_kernel[(n_rows,)](x2, weight if weight is not None else x2, y, rstd, n_cols, eps,
                                       HAS_WEIGHT=weight is not None, ACC=compute_dtype(x.dtype),
                                       BLOCK=row_block(n_cols))
    return y.reshape(x.shape), rstd


def rms_norm_backward(grad_y, x, weight, rstd):
    """(grad_x, grad_weight or None) by kernels."""
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    grad_y2 = rows(grad_y.to(x.dtype))
    grad_x = torch.empty_like(x2)
    programs = partial_count(n_rows)
    partial_w = torch.empty((programs, n_cols), dtype=accumulator_dtype(x.dtype)) if weight is not None else rstd
    rms_norm_backward_kernel[(programs,)](grad_y2, x2, weight if weight is not None else x2, rstd, grad_x, partial_w,
                                          n_rows, n_cols, HAS_WEIGHT=weight is not None, ACC=compute_dtype(x.dtype),
                                          BLOCK=row_block(n_cols))
    grad_weight = sum_partials(partial_w, weight.dtype) if weight is not None else None
    return grad_x.reshape(x.shape), grad_weight


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        y, rstd = rms_norm_forward(x, weight, eps)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, rstd = ctx.saved_tensors
        grad_x, grad_weight = rms_norm_backward(grad_y, x, weight, rstd)
        return grad_x, grad_weight, None


def rms_norm(x: torch.Tensor, weight=None, eps: float = 1e-6) -> torch.Tensor:
    """RMS norm of ``x`` over its last dimension, as
    ``torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)``. Differentiable in ``x`` and
    ``weight`` (optional)."""
    check_float(x, "rms_norm")
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"tritium.ops.rms_norm: x needs a non-empty last dimension, got shape {tuple(x.shape)}")
    if weight is not None:
        check_float(weight, "rms_norm", "weight")
        check_same_dtype("rms_norm", x, weight=weight)
        if weight.shape != (x.shape[-1],):
            raise ValueError(f"tritium.ops.rms_norm: weight must have shape ({x.shape[-1]},), got "
                             f"{tuple(weight.shape)}")
        weight = weight.contiguous()
    return RMSNormFunction.apply(x, weight, float(eps))
