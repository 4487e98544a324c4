"""Layer normalization over the last dimension, forward and backward, with weight and bias gradients:
``tritium.ops.layer_norm(x, weight=None, bias=None, eps=1e-5)``.

Forward: one program per row computes the mean and the biased variance in the compute type, writes
``y = (x - mean) * rstd * weight + bias`` and saves ``mean`` and ``rstd`` for the backward.

Backward, with ``xhat = (x - mean) * rstd`` and ``g = grad_y * weight``:
``grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat))``, ``grad_weight = sum_rows(grad_y * xhat)``,
``grad_bias = sum_rows(grad_y)``. The weight and bias gradients are reductions over every row: each
program walks rows ``p, p + P, p + 2P, ...``, keeps its share in registers and writes it to its own
row of a (P, N) partial buffer; ``sum_partials`` then adds the P rows. No atomics, so the result is
the same whatever order the programs run in.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from ._common import (
    accumulator_dtype, check_float, check_same_dtype, compute_dtype, partial_count, row_block, rows, sum_partials,
)


@triton.jit
def layer_norm_forward_kernel(x_ptr, weight_ptr, bias_ptr, y_ptr, mean_ptr, rstd_ptr, n_cols, eps,
                              HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr, ACC: tl.constexpr,
                              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    y = centered * rstd
    if HAS_WEIGHT:
        y = y * tl.load(weight_ptr + cols, mask=mask, other=0.0).to(ACC)
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + cols, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + row_start + cols, y, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_backward_kernel(grad_y_ptr, x_ptr, weight_ptr, mean_ptr, rstd_ptr, grad_x_ptr, partial_w_ptr,
                               partial_b_ptr, n_rows, n_cols, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
                               ACC: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if HAS_WEIGHT:
        weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(ACC)
    grad_w = tl.zeros((BLOCK,), dtype=ACC)
    grad_b = tl.zeros((BLOCK,), dtype=ACC)
    # a contiguous run of rows per program: the hardware prefetchers follow one stream through it
    rows_each = tl.cdiv(n_rows, programs)
    for row in range(pid * rows_each, tl.minimum(pid * rows_each + rows_each, n_rows)):
        row_start = row.to(tl.int64) * n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
        grad_y = tl.load(grad_y_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        if HAS_WEIGHT:
            g = grad_y * weight
        else:
            g = grad_y
        mean_g = tl.sum(g, axis=0) / n_cols
        mean_gx = tl.sum(g * xhat, axis=0) / n_cols
        grad_x = rstd * (g - mean_g - xhat * mean_gx)
        tl.store(grad_x_ptr + row_start + cols, grad_x, mask=mask)
        grad_w += grad_y * xhat
        grad_b += grad_y
    if HAS_WEIGHT:
        tl.store(partial_w_ptr + pid * n_cols + cols, grad_w, mask=mask)
    if HAS_BIAS:
        tl.store(partial_b_ptr + pid * n_cols + cols, grad_b, mask=mask)


def layer_norm_forward(x, weight, bias, eps):
    """(y, mean, rstd) by a kernel."""
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    y = torch.empty_like(x2)
    mean = torch.empty(n_rows, dtype=accumulator_dtype(x.dtype))
    rstd = torch.empty(n_rows, dtype=accumulator_dtype(x.dtype))
    layer_norm_forward_kernel[(n_rows,)](
        x2, weight if weight is not None else x2, bias if bias is not None else x2, y, mean, rstd, n_cols, eps,
        HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None, ACC=compute_dtype(x.dtype),
        BLOCK=row_block(n_cols))
    return y.reshape(x.shape), mean, rstd


def layer_norm_backward(grad_y, x, weight, bias, mean, rstd):
    """(grad_x, grad_weight, grad_bias) by kernels; the last two None without a weight / bias."""
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    grad_y2 = rows(grad_y.to(x.dtype))
    grad_x = torch.empty_like(x2)
    programs = partial_count(n_rows)
    partial_w = torch.empty((programs, n_cols), dtype=accumulator_dtype(x.dtype)) if weight is not None else mean
    partial_b = torch.empty((programs, n_cols), dtype=accumulator_dtype(x.dtype)) if bias is not None else mean
    layer_norm_backward_kernel[(programs,)](
        grad_y2, x2, weight if weight is not None else x2, mean, rstd, grad_x, partial_w, partial_b, n_rows, n_cols,
        HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None, ACC=compute_dtype(x.dtype),
        BLOCK=row_block(n_cols))
    grad_weight = sum_partials(partial_w, weight.dtype) if weight is not None else None
    grad_bias = sum_partials(partial_b, bias.dtype) if bias is not None else None
    return grad_x.reshape(x.shape), grad_weight, grad_bias


class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, bias, mean, rstd = ctx.saved_tensors
        grad_x, grad_weight, grad_bias = layer_norm_backward(grad_y, x, weight, bias, mean, rstd)
        return grad_x, grad_weight, grad_bias, None


def layer_norm(x: torch.Tensor, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    """Layer norm of ``x`` over its last dimension, as
    ``torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)``. Differentiable in
    ``x``, ``weight`` and ``bias`` (each optional)."""
    check_float(x, "layer_norm")
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"tritium.ops.layer_norm: x needs a non-empty last dimension, got shape {tuple(x.shape)}")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            check_float(value, "layer_norm", name)
            if value.shape != (x.shape[-1],):
                raise ValueError(f"tritium.ops.layer_norm: {name} must have shape ({x.shape[-1]},), got "
                                 f"{tuple(value.shape)}")
    check_same_dtype("layer_norm", x, weight=weight, bias=bias)
    weight = weight.contiguous() if weight is not None else None
    bias = bias.contiguous() if bias is not None else None
    return LayerNormFunction.apply(x, weight, bias, float(eps))
