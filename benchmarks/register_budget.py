"""Registers and spills of Triton's tutorial-03 matmul under the CUDA backend, without a GPU.

    .venv/bin/python benchmarks/register_budget.py [--arch 90] [--sizes divisible,any]

Compiles the tutorial's kernel (grouped program order, ``% M`` / ``% N`` wrapped offsets,
``tl.assume`` on the program's block ids, a K loop with masked tails) for each of Triton's
standard tile configs and prints what ``ptxas -v`` reports: registers per thread, spill stores
and loads in bytes, the shared memory the kernel asks for, and the compile time (Python lowering,
LLVM and ptxas together). ``divisible``: M, N, K and the strides specialized as multiples of 16
(``i32:16``, as at 4096^3); ``any``: plain ``i32``. Needs ptxas (the ``nvidia-cuda-nvcc`` wheel).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time

import tritium as triton
from tritium.backends.base import GPUTarget
from tritium.backends.cuda import nvptx
from tritium.compiler import ASTSource
from tutorial03 import load

# Triton's tutorial-03 configs for fp16 on CUDA: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps)
CONFIGS = [(128, 256, 64, 8), (64, 256, 32, 4), (128, 128, 32, 4), (128, 64, 32, 4), (64, 128, 32, 4),
           (128, 32, 32, 4), (64, 32, 32, 2), (32, 64, 32, 2), (128, 128, 64, 8), (128, 128, 64, 4)]


matmul = load("tritium").matmul


def signature(sizes: str) -> dict:
    size = "i32:16" if sizes == "divisible" else "i32"
    return {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": size, "N": size, "K": size,
            "stride_am": size, "stride_ak": "i32:1", "stride_bk": size, "stride_bn": "i32:1", "stride_cm": size,
            "stride_cn": "i32:1", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
            "GROUP_M": "constexpr"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--sizes", default="divisible,any")
    args = parser.parse_args()
    if nvptx.ptxas_path() is None:
        print("no ptxas here: pip install nvidia-cuda-nvcc", file=sys.stderr)
        return 1
    target = GPUTarget("cuda", args.arch, 32)
    print(f"tutorial-03 fp16 matmul for sm_{args.arch}{'a' if args.arch == 90 else ''}")
    print(f"{'sizes':10} {'tile':>12} {'warps':>5} {'regs':>5} {'spill st':>9} {'spill ld':>9} {'smem B':>7} {'compile s':>9}")
    with tempfile.TemporaryDirectory() as cache:
        triton.knobs.cache.dir = cache  # every config compiled from scratch
        for sizes in args.sizes.split(","):
            for bm, bn, bk, warps in CONFIGS:
                constants = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
                start = time.perf_counter()
                compiled = triton.compile(ASTSource(matmul, signature(sizes), constexprs=constants), target=target,
                                          options={"num_warps": warps})
                seconds = time.perf_counter() - start
                report = compiled.executable.ptxas_report
                print(f"{sizes:10} {f'{bm}x{bn}x{bk}':>12} {warps:5} {report.registers:5} {report.spill_stores:9} "
                      f"{report.spill_loads:9} {compiled.metadata.shared:7} {seconds:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
