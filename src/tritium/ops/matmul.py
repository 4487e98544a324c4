"""Matrix multiplication with a fused epilogue, forward and backward:
``tritium.ops.matmul(a, b, bias=None, activation="none", input_precision="ieee")``
computes ``activation(a @ b + bias)`` for fp16, bf16, fp32 and fp64.

Each program computes one (BLOCK_M, BLOCK_N) tile of the output, walking K in steps of BLOCK_K
with ``tl.dot`` into an fp32 accumulator (fp64 for fp64 inputs), then adds the bias, applies the
activation and stores -- the bias and the activation cost no extra pass over memory. The block
sizes are autotuned per (M, N, K) and dtypes; the winner is kept on disk (see
runtime/autotuner.py), so a second process does not tune again.

The kernel takes strides, so transposed operands need no copy: the backward is two more launches
of the same kernel, ``grad_a = grad_z @ b.T`` and ``grad_b = a.T @ grad_z``, where
``grad_z = grad_out * activation'(z)``. With an activation, the forward also stores the
pre-activation ``z = a @ b + bias`` for the backward; ``grad_bias`` is ``grad_z`` summed over rows.

``input_precision``: "ieee" (default; products as exact as torch's fp32 CPU matmul), "tf32" (what
Triton does by default on a GPU: inputs rounded to tf32, as tensor cores do) or "tf32x3". It only
affects fp32 inputs.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from . import activations
from ._common import check_float, check_same_dtype, compute_dtype, sum_partials
from .bias_activation import activation_backward

# Tile shapes to choose from. A dot needs every dimension >= 16; on the interpreter bigger tiles
# mean fewer loop iterations and bigger numpy calls, on a GPU they trade occupancy for reuse.
MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8),
]


@triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"], warmup=5, rep=20)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, z_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                  SAVE_PREACTIVATION: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None].to(tl.int64) * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(ACC)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SAVE_PREACTIVATION:
        tl.store(z_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], acc, mask=mask)
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, activations.apply(acc, ACTIVATION), mask=mask)


def matmul_forward(a2: torch.Tensor, b: torch.Tensor, bias=None, activation: str = "none",
                   input_precision: str = "ieee", save_preactivation: bool = False):
    """``(activation(a2 @ b + bias), z or None)`` for 2-D ``a2`` and ``b`` of any strides."""
    M, K = a2.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a2.dtype)
    z = torch.empty((M, N), dtype=a2.dtype) if save_preactivation else None
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    matmul_kernel[grid](a2, b, bias if bias is not None else c, c, z if z is not None else c, M, N, K,
                        a2.stride(0), a2.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        HAS_BIAS=bias is not None, ACTIVATION=activation, SAVE_PREACTIVATION=save_preactivation,
                        ACC=compute_dtype(a2.dtype), PRECISION=input_precision)
    return c, z


class MatmulFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, bias, activation, input_precision):
        a2 = a.reshape(-1, a.shape[-1]) if a.dim() != 2 else a
        save_z = activation != "none" and any(ctx.needs_input_grad[:3])
        c, z = matmul_forward(a2, b, bias, activation, input_precision, save_preactivation=save_z)
        ctx.activation = activation
        ctx.input_precision = input_precision
        ctx.a_shape = a.shape
        ctx.save_for_backward(a2, b, bias, z)
        return c.reshape(*a.shape[:-1], b.shape[1])

    @staticmethod
    def backward(ctx, grad_out):
        a2, b, bias, z = ctx.saved_tensors
        grad_out = grad_out.reshape(-1, grad_out.shape[-1]).to(a2.dtype)
        need_a, need_b, need_bias = ctx.needs_input_grad[:3]
        if ctx.activation == "none":
            grad_z = grad_out
            grad_bias = sum_partials(grad_out, bias.dtype) if need_bias else None
        else:
            grad_z, grad_bias = activation_backward(grad_out, z, None, ctx.activation, sum_rows=need_bias)
        grad_a = grad_b = None
        if need_a:
            grad_a, _ = matmul_forward(grad_z, b.t(), input_precision=ctx.input_precision)
            grad_a = grad_a.reshape(ctx.a_shape)
        if need_b:
            grad_b, _ = matmul_forward(a2.t(), grad_z, input_precision=ctx.input_precision)
        if grad_bias is not None:
            grad_bias = grad_bias.to(bias.dtype)
        return grad_a, grad_b, grad_bias, None, None


def matmul(a: torch.Tensor, b: torch.Tensor, bias=None, activation: str = "none",
           input_precision: str = "ieee") -> torch.Tensor:
    """``activation(a @ b + bias)``: ``a`` of shape (..., K) (leading dims flattened), ``b`` of shape
    (K, N), ``bias`` of shape (N,) or None; any strides. ``activation``: "none", "relu", "gelu",
    "gelu_tanh" or "silu". Differentiable in ``a``, ``b`` and ``bias``."""
    activation = activations.check_activation(activation, "matmul")
    check_float(a, "matmul", "a")
    check_float(b, "matmul", "b")
    check_same_dtype("matmul", a, b=b, bias=bias)
    if input_precision not in ("ieee", "tf32", "tf32x3"):
        raise ValueError(f"tritium.ops.matmul: input_precision must be 'ieee', 'tf32' or 'tf32x3', "
                         f"got {input_precision!r}")
    if a.dim() < 1 or b.dim() != 2:
        raise ValueError(f"tritium.ops.matmul: a must have at least one dimension and b exactly two, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"tritium.ops.matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                         f"({a.shape[-1]} != {b.shape[0]})")
    if bias is not None:
        check_float(bias, "matmul", "bias")
        if bias.shape != (b.shape[1],):
            raise ValueError(f"tritium.ops.matmul: bias must have shape ({b.shape[1]},), got {tuple(bias.shape)}")
        bias = bias.contiguous()
    if a.dim() != 2:
        a = a.contiguous()
    return MatmulFunction.apply(a, b, bias, activation, input_precision)
