"""Scaled dot-product attention, causal or not, forward and backward, flash-attention style:
``tritium.ops.scaled_dot_product_attention(q, k, v, is_causal=False, scale=None)``.

Forward: a program owns BLOCK_M query rows of one (batch, head) and walks the keys in BLOCK_N
chunks with an online softmax: a running row max ``m``, a running denominator ``l`` and an
unnormalised output ``acc``; a chunk that raises the max rescales ``l`` and ``acc`` by
``exp(m_old - m_new)``. The (Lq, Lk) score matrix never exists in memory. It stores the output and
each row's logsumexp ``lse = m + log(l)``.

Backward recomputes the probabilities ``p = exp(q k^T * scale - lse)`` chunk by chunk instead of
saving them. With ``delta = rowsum(grad_o * o)`` (a small first kernel),
``grad_s = p * (grad_o v^T - delta)``; one kernel owns a key chunk and accumulates
``grad_v = p^T grad_o`` and ``grad_k = scale * grad_s^T q`` over every query chunk, another owns
a query chunk and accumulates ``grad_q = scale * grad_s k``. Each output has one owner: no atomics.

Causal masking is top-left aligned, as ``torch.nn.functional.scaled_dot_product_attention`` with
``is_causal=True``: query i sees keys 0..i. Chunks entirely above the diagonal are skipped.
"""
from __future__ import annotations

import math

import torch

import tritium as triton
import tritium.language as tl

from ._common import accumulator_dtype, check_float, check_same_dtype, compute_dtype

# fp32 products as torch's CPU attention computes them (Triton's GPU default would be "tf32").
PRECISION = "ieee"


@triton.jit
def _load_kv_tile(k_ptr, v_ptr, head, rn, rd, rdv, Lk, D, DV):
    """The K and V rows ``rn`` of one head, zero past the sequence and the head dims."""
    k = tl.load(k_ptr + head * Lk * D + rn[:, None] * D + rd[None, :],
                mask=(rn[:, None] < Lk) & (rd[None, :] < D), other=0.0)
    v = tl.load(v_ptr + head * Lk * DV + rn[:, None] * DV + rdv[None, :],
                mask=(rn[:, None] < Lk) & (rdv[None, :] < DV), other=0.0)
    return k, v


@triton.jit
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, Lq, Lk, D, DV, SCALE: tl.constexpr,
                             CAUSAL: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                             BLOCK_DV: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    rm = start_m + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    q_ptrs = q_ptr + head * Lq * D + rm[:, None] * D + rd[None, :]
    q = tl.load(q_ptrs, mask=(rm[:, None] < Lq) & (rd[None, :] < D), other=0.0)
    row_max = tl.full((BLOCK_M,), -float("inf"), ACC)
    row_sum = tl.zeros((BLOCK_M,), dtype=ACC)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), dtype=ACC)
    end = Lk
    if CAUSAL:
        end = tl.minimum(Lk, start_m + BLOCK_M)
    for start_n in range(0, end, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k, v = _load_kv_tile(k_ptr, v_ptr, head, rn, rd, rdv, Lk, D, DV)
        scores = tl.dot(q, tl.trans(k), out_dtype=ACC, input_precision=PRECISION) * SCALE
        valid = rn[None, :] < Lk
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        scores = tl.where(valid, scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        rescale = tl.exp(row_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * rescale + tl.sum(p, axis=1)
        acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v, out_dtype=ACC, input_precision=PRECISION)
        row_max = new_max
    out = acc / row_sum[:, None]
    tl.store(o_ptr + head * Lq * DV + rm[:, None] * DV + rdv[None, :], out,
             mask=(rm[:, None] < Lq) & (rdv[None, :] < DV))
    tl.store(lse_ptr + head * Lq + rm, row_max + tl.log(row_sum), mask=rm < Lq)


@triton.jit
def attention_backward_delta_kernel(o_ptr, grad_o_ptr, delta_ptr, Lq, DV, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
                                    BLOCK_DV: tl.constexpr):
    # delta = rowsum(grad_o * o): the softmax backward's correction term, once per query row.
    head = tl.program_id(1).to(tl.int64)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rdv = tl.arange(0, BLOCK_DV)
    offsets = head * Lq * DV + rm[:, None] * DV + rdv[None, :]
    mask = (rm[:, None] < Lq) & (rdv[None, :] < DV)
    o = tl.load(o_ptr + offsets, mask=mask, other=0.0).to(ACC)
    grad_o = tl.load(grad_o_ptr + offsets, mask=mask, other=0.0).to(ACC)
    tl.store(delta_ptr + head * Lq + rm, tl.sum(o * grad_o, axis=1), mask=rm < Lq)


@triton.jit
def attention_backward_kv_kernel(q_ptr, k_ptr, v_ptr, grad_o_ptr, lse_ptr, delta_ptr, grad_k_ptr, grad_v_ptr,
                                 Lq, Lk, D, DV, SCALE: tl.constexpr, CAUSAL: tl.constexpr, ACC: tl.constexpr,
                                 PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                 BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    head = tl.program_id(1).to(tl.int64)
    rn = start_n + tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    k_mask = (rn[:, None] < Lk) & (rd[None, :] < D)
    v_mask = (rn[:, None] < Lk) & (rdv[None, :] < DV)
    k, v = _load_kv_tile(k_ptr, v_ptr, head, rn, rd, rdv, Lk, D, DV)
    grad_k = tl.zeros((BLOCK_N, BLOCK_D), dtype=ACC)
    grad_v = tl.zeros((BLOCK_N, BLOCK_DV), dtype=ACC)
    start = 0
    if CAUSAL:
        start = (start_n // BLOCK_M) * BLOCK_M  # earlier query rows see none of these keys
    for start_m in range(start, Lq, BLOCK_M):
        rm = start_m + tl.arange(0, BLOCK_M)
        q = tl.load(q_ptr + head * Lq * D + rm[:, None] * D + rd[None, :],
                    mask=(rm[:, None] < Lq) & (rd[None, :] < D), other=0.0)
        grad_o = tl.load(grad_o_ptr + head * Lq * DV + rm[:, None] * DV + rdv[None, :],
                         mask=(rm[:, None] < Lq) & (rdv[None, :] < DV), other=0.0)
        lse = tl.load(lse_ptr + head * Lq + rm, mask=rm < Lq, other=0.0)
        delta = tl.load(delta_ptr + head * Lq + rm, mask=rm < Lq, other=0.0)
        scores = tl.dot(q, tl.trans(k), out_dtype=ACC, input_precision=PRECISION) * SCALE
        valid = (rm[:, None] < Lq) & (rn[None, :] < Lk)
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        p = tl.where(valid, tl.exp(scores - lse[:, None]), 0.0)
        grad_v += tl.dot(tl.trans(p.to(grad_o.dtype)), grad_o, out_dtype=ACC, input_precision=PRECISION)
        grad_p = tl.dot(grad_o, tl.trans(v), out_dtype=ACC, input_precision=PRECISION)
        grad_s = p * (grad_p - delta[:, None])
        grad_k += tl.dot(tl.trans(grad_s.to(q.dtype)), q, out_dtype=ACC, input_precision=PRECISION)
    tl.store(grad_k_ptr + head * Lk * D + rn[:, None] * D + rd[None, :], grad_k * SCALE, mask=k_mask)
    tl.store(grad_v_ptr + head * Lk * DV + rn[:, None] * DV + rdv[None, :], grad_v, mask=v_mask)


@triton.jit
def attention_backward_q_kernel(q_ptr, k_ptr, v_ptr, grad_o_ptr, lse_ptr, delta_ptr, grad_q_ptr, Lq, Lk, D, DV,
                                SCALE: tl.constexpr, CAUSAL: tl.constexpr, ACC: tl.constexpr,
                                PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    rm = start_m + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    q_mask = (rm[:, None] < Lq) & (rd[None, :] < D)
    q = tl.load(q_ptr + head * Lq * D + rm[:, None] * D + rd[None, :], mask=q_mask, other=0.0)
    grad_o = tl.load(grad_o_ptr + head * Lq * DV + rm[:, None] * DV + rdv[None, :],
                     mask=(rm[:, None] < Lq) & (rdv[None, :] < DV), other=0.0)
    lse = tl.load(lse_ptr + head * Lq + rm, mask=rm < Lq, other=0.0)
    delta = tl.load(delta_ptr + head * Lq + rm, mask=rm < Lq, other=0.0)
    grad_q = tl.zeros((BLOCK_M, BLOCK_D), dtype=ACC)
    end = Lk
    if CAUSAL:
        end = tl.minimum(Lk, start_m + BLOCK_M)
    for start_n in range(0, end, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k, v = _load_kv_tile(k_ptr, v_ptr, head, rn, rd, rdv, Lk, D, DV)
        scores = tl.dot(q, tl.trans(k), out_dtype=ACC, input_precision=PRECISION) * SCALE
        valid = (rm[:, None] < Lq) & (rn[None, :] < Lk)
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        p = tl.where(valid, tl.exp(scores - lse[:, None]), 0.0)
        grad_p = tl.dot(grad_o, tl.trans(v), out_dtype=ACC, input_precision=PRECISION)
        grad_s = p * (grad_p - delta[:, None])
        grad_q += tl.dot(grad_s.to(k.dtype), k, out_dtype=ACC, input_precision=PRECISION)
    tl.store(grad_q_ptr + head * Lq * D + rm[:, None] * D + rd[None, :], grad_q * SCALE, mask=q_mask)


def _blocks(Lq: int, Lk: int, D: int, DV: int) -> dict:
    """Block sizes: tl.dot needs every dimension >= 16; 64 keeps a tile at 4096 elements."""
    return {"BLOCK_M": min(64, max(16, triton.next_power_of_2(Lq))),
            "BLOCK_N": min(64, max(16, triton.next_power_of_2(Lk))),
            "BLOCK_D": max(16, triton.next_power_of_2(D)), "BLOCK_DV": max(16, triton.next_power_of_2(DV))}


def attention_forward(q3, k3, v3, scale: float, causal: bool):
    """(o, lse) for contiguous (heads, L, D) tensors."""
    heads, Lq, D = q3.shape
    Lk, DV = v3.shape[1], v3.shape[2]
    o = torch.empty((heads, Lq, DV), dtype=q3.dtype)
    lse = torch.empty((heads, Lq), dtype=accumulator_dtype(q3.dtype))
    blocks = _blocks(Lq, Lk, D, DV)
    attention_forward_kernel[(triton.cdiv(Lq, blocks["BLOCK_M"]), heads)](
        q3, k3, v3, o, lse, Lq, Lk, D, DV, SCALE=scale, CAUSAL=causal, ACC=compute_dtype(q3.dtype),
        PRECISION=PRECISION, **blocks)
    return o, lse


def attention_backward(grad_o, q3, k3, v3, o, lse, scale: float, causal: bool):
    heads, Lq, D = q3.shape
    Lk, DV = v3.shape[1], v3.shape[2]
    grad_o = grad_o.contiguous().to(q3.dtype)
    blocks = _blocks(Lq, Lk, D, DV)
    acc = compute_dtype(q3.dtype)
    delta = torch.empty((heads, Lq), dtype=accumulator_dtype(q3.dtype))
    attention_backward_delta_kernel[(triton.cdiv(Lq, blocks["BLOCK_M"]), heads)](
        o, grad_o, delta, Lq, DV, ACC=acc, BLOCK_M=blocks["BLOCK_M"], BLOCK_DV=blocks["BLOCK_DV"])
    grad_q, grad_k, grad_v = torch.empty_like(q3), torch.empty_like(k3), torch.empty_like(v3)
    attention_backward_kv_kernel[(triton.cdiv(Lk, blocks["BLOCK_N"]), heads)](
        q3, k3, v3, grad_o, lse, delta, grad_k, grad_v, Lq, Lk, D, DV, SCALE=scale, CAUSAL=causal, ACC=acc,
        PRECISION=PRECISION, **blocks)
    attention_backward_q_kernel[(triton.cdiv(Lq, blocks["BLOCK_M"]), heads)](
        q3, k3, v3, grad_o, lse, delta, grad_q, Lq, Lk, D, DV, SCALE=scale, CAUSAL=causal, ACC=acc,
        PRECISION=PRECISION, **blocks)
    return grad_q, grad_k, grad_v


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, scale):
        q3 = q.reshape(-1, q.shape[-2], q.shape[-1]).contiguous()
        k3 = k.reshape(-1, k.shape[-2], k.shape[-1]).contiguous()
        v3 = v.reshape(-1, v.shape[-2], v.shape[-1]).contiguous()
        o, lse = attention_forward(q3, k3, v3, scale, causal)
        ctx.save_for_backward(q3, k3, v3, o, lse)
        ctx.causal, ctx.scale = causal, scale
        ctx.shapes = (q.shape, k.shape, v.shape)
        return o.reshape(*q.shape[:-1], v.shape[-1])

    @staticmethod
    def backward(ctx, grad_o):
        q3, k3, v3, o, lse = ctx.saved_tensors
        grad_q, grad_k, grad_v = attention_backward(grad_o.reshape(o.shape), q3, k3, v3, o, lse, ctx.scale,
                                                    ctx.causal)
        q_shape, k_shape, v_shape = ctx.shapes
        return grad_q.reshape(q_shape), grad_k.reshape(k_shape), grad_v.reshape(v_shape), None, None


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False,
                                 scale=None) -> torch.Tensor:
    """``softmax(q k^T * scale [+ causal mask]) v`` over the last two dimensions, as
    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=..., scale=...)``:
    q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv) with the same leading dimensions; ``scale``
    defaults to ``1 / sqrt(D)``. Differentiable in q, k and v."""
    for name, value in (("q", q), ("k", k), ("v", v)):
        check_float(value, "scaled_dot_product_attention", name)
        if value.dim() < 2:
            raise ValueError(f"tritium.ops.scaled_dot_product_attention: {name} needs at least 2 dimensions, "
                             f"got shape {tuple(value.shape)}")
    check_same_dtype("scaled_dot_product_attention", q, k=k, v=v)
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"tritium.ops.scaled_dot_product_attention: incompatible shapes q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}: need q (..., Lq, D), k (..., Lk, D), "
                         "v (..., Lk, Dv)")
    if k.shape[-2] == 0:
        raise ValueError("tritium.ops.scaled_dot_product_attention: there are no keys (Lk == 0)")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return AttentionFunction.apply(q, k, v, bool(is_causal), scale)


attention = scaled_dot_product_attention
