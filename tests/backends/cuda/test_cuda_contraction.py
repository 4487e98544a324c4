"""The CUDA backend contracts multiply-adds in its LLVM (nvptx.contract, as Triton does), the host
backends in the ``contract`` pass: the same kernels give as many fmas in the PTX (compiled here, no GPU
needed) as in the host's IR."""
from __future__ import annotations

import re

import pytest

import tritium as triton
from tritium.backends.base import GPUTarget
from tritium.compiler import ASTSource, compile_source
from helpers_contraction import BLOCK, CASES, expression_kernel

pytest.importorskip("llvmlite")

SIGNATURE = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "d_ptr": "*fp32", "out_ptr": "*fp32",
             "out2_ptr": "*fp32", "CASE": "constexpr", "BLOCK": "constexpr"}


@pytest.mark.parametrize("case", CASES)
def test_the_host_fuses_what_the_cuda_backends_llvm_fuses(case, monkeypatch):
    """The same kernel compiled for the CUDA backend (its LLVM contracts, the pass does not run there)
    and for the host (every pipeline pass): as many fmas in the PTX as in the host's IR (a block of 64
    over 128 threads: one element each)."""
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # the host's IR with contraction
    constants = {"CASE": case, "BLOCK": BLOCK}
    ptx = triton.compile(ASTSource(expression_kernel, SIGNATURE, constexprs=constants), target=GPUTarget("cuda", 90, 32),
                         options={"enable_fp_fusion": True}).asm["ptx"]
    host = str(compile_source(ASTSource(expression_kernel, SIGNATURE, constexprs=constants)).function)
    assert len(re.findall(r"\bfma\.rn\.f32\b", ptx)) == len(re.findall(r"= fma ", host)) >= 1
