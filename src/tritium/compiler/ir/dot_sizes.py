"""The smallest K a ``tl.dot`` may have where a compiled target feeds tensor-core tiles, and the words
for one below it (the frontend's strict mode and the CUDA backend both check it)."""
from __future__ import annotations

from typing import Optional

from . import types as T

# The smallest K each compiled target takes, by the inputs' bit width (M and N may be 1: the tensor
# cores are fed padded tiles). Compiled Triton for NVIDIA: 32 for 8-bit inputs, 16 for the others.
# tritium's CUDA backend: 32 bytes' worth of elements (its mma tiles take fp32 at K=8, fp64 at 4).
# The interpreter and the CPU backend take any K, as Triton's interpreter does.
TRITON_MIN_DOT_K = {8: 32}, 16
CUDA_MIN_DOT_K = {8: 32, 16: 16, 32: 8, 64: 4}, 16


def dot_k_problem(dtype: T.dtype, m: int, n: int, k: int, minimums) -> Optional[str]:
    """Triton's words for a K below the target's minimum for inputs of ``dtype``, else None."""
    table, otherwise = minimums
    min_k = table.get(dtype.primitive_bitwidth, otherwise)
    if k >= min_k:
        return None
    return f"Input shapes should have M >= 1, N >= 1 and K >= {min_k} (tl.dot of {dtype} inputs, got M={m}, " \
           f"N={n}, K={k})"
