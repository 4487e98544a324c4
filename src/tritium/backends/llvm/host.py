"""What the host CPU's vector unit offers the code generated for it, for the CPU backend and the
math harness alike."""
from __future__ import annotations

import re


def has_avx512(features: str) -> bool:
    """True when the feature string (llvmlite's ``get_host_cpu_features().flatten()``) has AVX-512F."""
    return "+avx512f" in features.split(",")


def prefer_wide_vectors(llvm_ir: str) -> str:
    """``llvm_ir`` with every function asking for 512-bit vectors: on AVX-512 machines LLVM's
    default is 256 bits, and loops of fp32 math run 1.3x-2x faster at 16 lanes. (llvmlite prints a
    function's ``{`` on the line after its ``define``.)"""
    return re.sub(r'^(define [^\n]*?)\n?\{$', r'\1 "prefer-vector-width"="512"\n{', llvm_ir, flags=re.M)
