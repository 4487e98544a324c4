"""Cross-entropy of logits against class indices, forward and backward, for large vocabularies:
``tritium.ops.cross_entropy(logits, target, reduction="mean", ignore_index=-100)``.

A row of logits may be too long for one block (a 50k-token vocabulary), so one program walks its
row in BLOCK_V chunks keeping an *online* logsumexp: a running max ``m`` and a running sum ``s`` of
``exp(x - m)``; when a chunk raises the max, the sum so far is rescaled by ``exp(m_old - m_new)``.
``loss = logsumexp(row) - row[target]``. The forward saves each row's logsumexp, so the backward
walks the row once more and writes ``grad_logits = grad * (exp(x - lse) - onehot(target))``
without recomputing any reduction. Rows whose target is ``ignore_index`` have zero loss and
gradient and do not count in the mean.
"""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

from ._common import accumulator_dtype, check_float, compute_dtype, sum_partials

# Vocabulary chunk per loop iteration: a block of this many logits per program.
VOCAB_BLOCK = 2048


@triton.jit
def cross_entropy_forward_kernel(logits_ptr, target_ptr, loss_ptr, lse_ptr, n_vocab, ignore_index,
                                 ACC: tl.constexpr, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    row_start = row.to(tl.int64) * n_vocab
    target = tl.load(target_ptr + row)
    ignored = target == ignore_index
    tl.device_assert(ignored | ((target >= 0) & (target < n_vocab)), "cross_entropy: target out of range")
    running_max = tl.full((), -float("inf"), ACC)
    running_sum = tl.zeros((), dtype=ACC)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row_start + cols, mask=cols < n_vocab, other=-float("inf")).to(ACC)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    safe_target = tl.where(ignored, 0, target)
    target_logit = tl.load(logits_ptr + row_start + safe_target).to(ACC)
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, lse - target_logit))
    tl.store(lse_ptr + row, lse)


@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, grad_loss_ptr, grad_logits_ptr, n_vocab,
                                  ignore_index, grad_stride, ACC: tl.constexpr, BLOCK_V: tl.constexpr):
    # grad_stride is 0 when one gradient (of the mean or the sum) applies to every row.
    row = tl.program_id(0)
    row_start = row.to(tl.int64) * n_vocab
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    grad = tl.load(grad_loss_ptr + row * grad_stride).to(ACC)
    grad = tl.where(target == ignore_index, 0.0, grad)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < n_vocab
        x = tl.load(logits_ptr + row_start + cols, mask=mask, other=0.0).to(ACC)
        probability = tl.exp(x - lse)
        onehot = tl.where(cols == target, 1.0, 0.0)
        tl.store(grad_logits_ptr + row_start + cols, grad * (probability - onehot), mask=mask)


def _vocab_block(n_vocab: int) -> int:
    return max(16, min(VOCAB_BLOCK, triton.next_power_of_2(n_vocab)))


def cross_entropy_forward(logits2: torch.Tensor, target: torch.Tensor, ignore_index: int):
    """(per-row losses, per-row logsumexp), both in the accumulator dtype."""
    n_rows, n_vocab = logits2.shape
    losses = torch.empty(n_rows, dtype=accumulator_dtype(logits2.dtype))
    lse = torch.empty(n_rows, dtype=accumulator_dtype(logits2.dtype))
    cross_entropy_forward_kernel[(n_rows,)](logits2, target, losses, lse, n_vocab, ignore_index,
                                            ACC=compute_dtype(logits2.dtype), BLOCK_V=_vocab_block(n_vocab))
    return losses, lse


def cross_entropy_backward(grad_rows: torch.Tensor, logits2, target, lse, ignore_index: int) -> torch.Tensor:
    """``grad_rows``: the gradient of each row's loss (n_rows,), or one value for all rows (1,)."""
    n_rows, n_vocab = logits2.shape
    grad_logits = torch.empty_like(logits2)
    grad_rows = grad_rows.contiguous()
    cross_entropy_backward_kernel[(n_rows,)](logits2, target, lse, grad_rows, grad_logits, n_vocab, ignore_index,
                                             1 if grad_rows.numel() == n_rows and n_rows > 1 else 0,
                                             ACC=compute_dtype(logits2.dtype), BLOCK_V=_vocab_block(n_vocab))
    return grad_logits


class CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, reduction, ignore_index):
        logits2 = logits.reshape(-1, logits.shape[-1]).contiguous()
        target1 = target.reshape(-1).contiguous().to(torch.int64)
        losses, lse = cross_entropy_forward(logits2, target1, ignore_index)
        ctx.reduction = reduction
        ctx.ignore_index = ignore_index
        ctx.logits_shape = logits.shape
        ctx.target_shape = target.shape
        if reduction == "none":
            ctx.count = None
            out = losses.to(logits.dtype).reshape(target.shape)
        else:
            total = sum_partials(losses.reshape(-1, 1), losses.dtype).reshape(())
            if reduction == "mean":
                ctx.count = int((target1 != ignore_index).sum())
                total = total / ctx.count
            else:
                ctx.count = None
            out = total.to(logits.dtype)
        ctx.save_for_backward(logits2, target1, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        logits2, target1, lse, = ctx.saved_tensors
        if ctx.reduction == "none":
            grad_rows = grad_out.reshape(-1)
        elif ctx.reduction == "mean":
            grad_rows = (grad_out / ctx.count).reshape(1)
        else:
            grad_rows = grad_out.reshape(1)
        grad_logits = cross_entropy_backward(grad_rows.to(lse.dtype), logits2, target1, lse, ctx.ignore_index)
        return grad_logits.reshape(ctx.logits_shape), None, None, None


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, reduction: str = "mean",
                  ignore_index: int = -100) -> torch.Tensor:
    """Cross-entropy of ``logits`` (..., V) against integer ``target`` (...), as
    ``torch.nn.functional.cross_entropy(logits.reshape(-1, V), target.reshape(-1), ...)``: the
    classes are the last dimension. ``reduction``: "mean" (over rows whose target is not
    ``ignore_index``), "sum" or "none" (a loss per row, shaped like ``target``). Differentiable in
    ``logits``. A target outside [0, V) that is not ``ignore_index`` raises DeviceAssertionError."""
    check_float(logits, "cross_entropy", "logits")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"tritium.ops.cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if target.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"tritium.ops.cross_entropy: target must hold class indices (int64 or int32), "
                        f"got {target.dtype}")
    if logits.dim() < 1 or tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ValueError(f"tritium.ops.cross_entropy: target must have the shape of logits without its last dimension, "
                         f"got logits {tuple(logits.shape)} and target {tuple(target.shape)}")
    return CrossEntropyFunction.apply(logits, target, reduction, int(ignore_index))
