"""Fused bias + activation, ``act(x + bias)`` over the last dimension, forward and backward:
``tritium.ops.bias_activation(x, bias, activation="relu"|"gelu"|"gelu_tanh"|"silu"|"none")``.

The forward reads ``x`` and ``bias`` once and writes ``y`` once (unfused, torch makes ``x + bias``
a tensor of its own). The backward recomputes ``z = x + bias`` instead of saving it, writes
``grad_x = grad_y * act'(z)``, and sums ``grad_bias`` over the rows in two stages: each program
adds its rows into its own row of a partial buffer, then ``sum_partials`` adds those up.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from . import activations
from ._common import (
    ELEMENTWISE_BLOCK, accumulator_dtype, check_float, check_same_dtype, compute_dtype, partial_count, rows,
    sum_partials,
)


@triton.jit
def bias_activation_forward_kernel(x_ptr, bias_ptr, y_ptr, n_rows, n_cols, HAS_BIAS: tl.constexpr,
                                   ACTIVATION: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
                                   BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r[:, None] < n_rows) & (c[None, :] < n_cols)
    offsets = r[:, None].to(tl.int64) * n_cols + c[None, :]
    z = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
    if HAS_BIAS:
        z += tl.load(bias_ptr + c, mask=c < n_cols, other=0.0).to(ACC)[None, :]
    tl.store(y_ptr + offsets, activations.apply(z, ACTIVATION), mask=mask)


@triton.jit
def bias_activation_backward_kernel(grad_y_ptr, x_ptr, bias_ptr, grad_x_ptr, partial_ptr, n_rows, n_cols,
                                    ADD_BIAS: tl.constexpr, SUM_ROWS: tl.constexpr, ACTIVATION: tl.constexpr,
                                    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # grad_x = grad_y * act'(x + bias). Program (p, j) handles column strip j of row tiles p, p + P,
    # p + 2P, ... and, with SUM_ROWS, writes its share of sum_rows(grad_x) -- the bias's gradient --
    # to row p of the partial buffer.
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = c < n_cols
    if ADD_BIAS:
        bias = tl.load(bias_ptr + c, mask=col_mask, other=0.0).to(ACC)
    column_sums = tl.zeros((BLOCK_N,), dtype=ACC)
    for tile in range(pid, tl.cdiv(n_rows, BLOCK_M), programs):
        r = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        mask = (r[:, None] < n_rows) & col_mask[None, :]
        offsets = r[:, None].to(tl.int64) * n_cols + c[None, :]
        z = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
        if ADD_BIAS:
            z += bias[None, :]
        grad_y = tl.load(grad_y_ptr + offsets, mask=mask, other=0.0).to(ACC)
        grad_z = grad_y * activations.derivative(z, ACTIVATION)
        tl.store(grad_x_ptr + offsets, grad_z, mask=mask)
        if SUM_ROWS:
            column_sums += tl.sum(tl.where(mask, grad_z, 0.0), axis=0)
    if SUM_ROWS:
        tl.store(partial_ptr + pid * n_cols + c, column_sums, mask=col_mask)


def _tiles(n_cols: int) -> tuple[int, int]:
    block_n = min(triton.next_power_of_2(n_cols), ELEMENTWISE_BLOCK)
    return max(1, ELEMENTWISE_BLOCK // block_n), block_n


def bias_activation_forward(x: torch.Tensor, bias, activation: str) -> torch.Tensor:
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    y = torch.empty_like(x2)
    block_m, block_n = _tiles(n_cols)
    grid = (triton.cdiv(n_rows, block_m), triton.cdiv(n_cols, block_n))
    bias_activation_forward_kernel[grid](x2, bias if bias is not None else x2, y, n_rows, n_cols,
                                         HAS_BIAS=bias is not None, ACTIVATION=activation,
                                         ACC=compute_dtype(x.dtype), BLOCK_M=block_m, BLOCK_N=block_n)
    return y.reshape(x.shape)


def activation_backward(grad_y: torch.Tensor, x: torch.Tensor, bias, activation: str, sum_rows: bool):
    """``grad_z = grad_y * activation'(x + bias)`` (``bias`` may be None) and, when ``sum_rows``,
    ``grad_z`` summed over the rows (in the accumulator dtype), else None."""
    x2 = rows(x)
    n_rows, n_cols = x2.shape
    grad_y2 = rows(grad_y.to(x.dtype))
    grad_z = torch.empty_like(x2)
    block_m, block_n = _tiles(n_cols)
    programs = partial_count(triton.cdiv(n_rows, block_m))
    partial = torch.empty((programs, n_cols), dtype=accumulator_dtype(x.dtype)) if sum_rows else grad_z
    bias_activation_backward_kernel[(programs, triton.cdiv(n_cols, block_n))](
        grad_y2, x2, bias if bias is not None else x2, grad_z, partial, n_rows, n_cols, ADD_BIAS=bias is not None,
        SUM_ROWS=sum_rows, ACTIVATION=activation, ACC=compute_dtype(x.dtype), BLOCK_M=block_m, BLOCK_N=block_n)
    column_sums = sum_partials(partial, partial.dtype) if sum_rows else None
    return grad_z.reshape(x.shape), column_sums


def bias_activation_backward(grad_y: torch.Tensor, x: torch.Tensor, bias, activation: str,
                             want_bias_grad: bool = True):
    """(grad_x, grad_bias or None) for ``y = activation(x + bias)``."""
    want_bias_grad = want_bias_grad and bias is not None
    grad_x, grad_bias = activation_backward(grad_y, x, bias, activation, sum_rows=want_bias_grad)
    return grad_x, (grad_bias.to(bias.dtype) if want_bias_grad else None)


class BiasActivationFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, activation):
        ctx.activation = activation
        ctx.save_for_backward(x, bias)
        return bias_activation_forward(x, bias, activation)

    @staticmethod
    def backward(ctx, grad_y):
        x, bias = ctx.saved_tensors
        grad_x, grad_bias = bias_activation_backward(grad_y, x, bias, ctx.activation, ctx.needs_input_grad[1])
        return grad_x, grad_bias, None


def bias_activation(x: torch.Tensor, bias=None, activation: str = "relu") -> torch.Tensor:
    """``activation(x + bias)``, ``bias`` of shape ``(x.shape[-1],)`` (or None) broadcast over the
    leading dimensions. ``activation``: "relu", "gelu", "gelu_tanh", "silu" or "none". Differentiable
    in ``x`` and ``bias``."""
    activation = activations.check_activation(activation, "bias_activation")
    check_float(x, "bias_activation")
    if x.dim() == 0:
        raise ValueError("tritium.ops.bias_activation: x must have at least one dimension")
    if bias is not None:
        check_float(bias, "bias_activation", "bias")
        check_same_dtype("bias_activation", x, bias=bias)
        if bias.shape != (x.shape[-1],):
            raise ValueError(f"tritium.ops.bias_activation: bias must have shape ({x.shape[-1]},), the size of x's "
                             f"last dimension, got {tuple(bias.shape)}")
        bias = bias.contiguous()
    return BiasActivationFunction.apply(x, bias, activation)
