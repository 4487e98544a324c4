"""What the ops share: checking inputs, the dtype kernels compute in, rows, and summing partial buffers."""
from __future__ import annotations

import torch

import tritium as triton
import tritium.language as tl

# Elementwise kernels give each program this many elements: big enough that the interpreter's
# numpy calls amortise, small enough to look like a GPU program.
ELEMENTWISE_BLOCK = 1024

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_float(x: torch.Tensor, op: str, name: str = "input") -> None:
    """Raises TypeError unless ``x`` is a CPU tensor of a floating type the kernels take."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"tritium.ops.{op}: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"tritium.ops.{op}: {name} must be float16, bfloat16, float32 or float64, got {x.dtype}")


def check_same_dtype(op: str, reference: torch.Tensor, **others) -> None:
    for name, value in others.items():
        if value is not None and value.dtype != reference.dtype:
            raise TypeError(f"tritium.ops.{op}: {name} has dtype {value.dtype} but the input has {reference.dtype}; "
                            "cast one of them")


def compute_dtype(dtype: torch.dtype):
    """The type a kernel computes in: fp64 for fp64 tensors (so ``gradcheck`` can run), otherwise
    fp32 -- fp16 and bf16 are storage types, upcast on load and rounded once on store, as GPU
    kernels do (and ``tl.exp``/``tl.erf``/``tl.log`` refuse fp16 anyway)."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def rows(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a contiguous 2-D tensor of rows over its last dimension (leading dims flattened)."""
    x = x.contiguous()
    return x.reshape(-1, x.shape[-1]) if x.dim() > 0 else x.reshape(1, 1)


def row_block(n: int) -> int:
    """A power-of-two block that holds a whole row of ``n`` elements."""
    return max(16, triton.next_power_of_2(n))


def partial_count(n_rows: int, cap: int = 64) -> int:
    """How many programs share ``n_rows`` rows when each keeps a partial sum (of a weight gradient)."""
    return max(1, min(n_rows, cap))


@triton.jit
def _column_sum_kernel(partial_ptr, out_ptr, n_rows, n_cols, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
                       BLOCK_C: tl.constexpr):
    # Each program sums one strip of columns over every row of the partial buffer.
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < n_cols
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=ACC)
    for start in range(0, n_rows, BLOCK_R):
        r = start + tl.arange(0, BLOCK_R)
        mask = (r[:, None] < n_rows) & col_mask[None, :]
        acc += tl.load(partial_ptr + r[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def sum_partials(partial: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The column sums of a (programs, n) buffer of partial sums, as a tensor of ``dtype``.

    The second stage of a two-stage reduction: programs of a backward kernel each add their rows'
    contributions to a weight's gradient into their own row of ``partial`` (no atomics, so the
    result does not depend on the order programs run in), and this sums the rows."""
    partial = partial.contiguous()
    n_rows, n_cols = partial.shape
    out = torch.empty(n_cols, dtype=dtype, device=partial.device)
    block_c = min(256, row_block(n_cols))
    block_r = max(1, min(triton.next_power_of_2(n_rows), 4096 // block_c))
    _column_sum_kernel[(triton.cdiv(n_cols, block_c),)](partial, out, n_rows, n_cols, ACC=compute_dtype(partial.dtype),
                                                         BLOCK_R=block_r, BLOCK_C=block_c)
    return out


def accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    """The torch dtype of buffers that hold sums (partials, statistics): fp64 for fp64, else fp32."""
    return torch.float64 if dtype == torch.float64 else torch.float32
