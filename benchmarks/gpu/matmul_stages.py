"""Triton's tutorial-03 fp16 matmul under tritium's CUDA backend and under Triton, config by config and
stage count by stage count, on one GPU in one process, each checked against torch (cuBLAS).

    python benchmarks/gpu/matmul_stages.py [--size 4096] [--repeat 3] [--configs N]

The kernel's source (``benchmarks/tutorial03.py``: the tutorial's, K tail masked) is imported under both
compilers. Each row: the config, TFLOP/s of tritium with mma.sync, tritium with Hopper's wgmma (``wgmma=True``)
and Triton (median of ``do_bench`` medians, alternating), the best tritium's ratio to Triton, each
one's first call (compilation included) and tritium's shared memory; cuBLAS's TFLOP/s last.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tutorial03 import load  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): Triton's tutorial-03 fp16 configs, and the
# stage counts around them
CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 128, 64, 4, 4),
           (128, 128, 32, 4, 4), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4), (128, 128, 64, 4, 1),
           (128, 128, 64, 4, 2), (128, 128, 32, 4, 1)]


def main() -> int:
    import triton
    from triton.testing import do_bench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", type=int, default=len(CONFIGS), help="time the first this many configs")
    args = parser.parse_args()
    kernels = {"tritium": load("tritium"), "triton": load("triton")}
    size = args.size
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=generator).half()
    b = torch.randn(size, size, device="cuda", generator=generator).half()
    expected = a @ b
    out = torch.empty(size, size, device="cuda", dtype=torch.float16)
    flop = 2 * size ** 3
    print(f"card: {torch.cuda.get_device_name()}; tutorial-03 fp16 matmul {size}^3; TFLOP/s")
    variants = {"tritium": ("tritium", {}), "wgmma": ("tritium", {"wgmma": True}), "triton": ("triton", {})}
    print(f"{'config':>22} {'tritium':>8} {'wgmma':>8} {'triton':>8} {'ratio':>6} {'first s':>20} {'smem KB':>8}")
    for bm, bn, bk, warps, stages in CONFIGS[:args.configs]:
        grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)

        def run(variant):
            lib, extra = variants[variant]
            return kernels[lib].matmul[grid](a, b, out, size, size, size, a.stride(0), a.stride(1), b.stride(0),
                                             b.stride(1), out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn,
                                             BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages, **extra)

        first, smem, failed = {}, "", {}
        for variant in variants:
            out.fill_(float("nan"))
            start = time.perf_counter()
            try:
                compiled = run(variant)
                torch.cuda.synchronize()
                first[variant] = time.perf_counter() - start
                torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-1)
            except Exception as error:  # a config one compiler cannot run (shared memory) or gets wrong
                failed[variant] = f"{type(error).__name__}: {str(error).splitlines()[0][:100]}"
                continue
            if variant == "wgmma":
                smem = f"{getattr(compiled.metadata, 'shared', 0) // 1024}"
        rates = {variant: [] for variant in first if variant not in failed}
        for _ in range(args.repeat):
            for variant, values in rates.items():
                ms = do_bench(lambda: run(variant), warmup=25, rep=200, return_mode="median")
                values.append(flop / ms / 1e9)
        median = {variant: sorted(r)[len(r) // 2] for variant, r in rates.items()}
        name = f"{bm}x{bn}x{bk} w{warps} s{stages}"
        cells = [f"{median[v]:8.1f}" if v in median else f"{'failed':>8}" for v in variants]
        best = max((median[v] for v in ("tritium", "wgmma") if v in median), default=float("nan"))
        ratio = best / median["triton"] if "triton" in median else float("nan")
        firsts = "/".join(f"{first.get(v, float('nan')):.2f}" for v in variants)
        print(f"{name:>22} {' '.join(cells)} {ratio:6.2f} {firsts:>20} {smem:>8}", flush=True)
        for variant, why in failed.items():
            print(f"    {variant}: {why}")
    ms = do_bench(lambda: a @ b, warmup=25, rep=200, return_mode="median")
    print(f"{'cuBLAS (torch)':>22} {flop / ms / 1e9:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
