"""Does a row kernel's speed depend on where its tensors live? Run on a machine with a GPU, Triton and torch:
`PYTHONPATH=src python benchmarks/gpu/row_variance.py`.

For several fresh allocations of the same 16384x4096 input and output, times the layernorm and
softmax kernels of `benchmarks/cuda_vs_triton.py` under tritium and under Triton (median of CUDA
events, `triton.testing.do_bench`), alternating, and prints GB/s per allocation: a speed that
follows the allocation under one compiler and not the other points at its access pattern.
"""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cuda_vs_triton import load  # noqa: E402


def main():
    from triton.testing import do_bench

    tri, ref = load("tritium"), load("triton")
    rows, cols = 16384, 4096
    w, bias = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    amount = 2 * rows * cols * 4
    keep = []
    for trial in range(6):
        xs = torch.randn(rows, cols, device="cuda")
        out = torch.empty_like(xs)
        keep.append((xs, out))  # later allocations land elsewhere
        line = [f"allocation {trial} (x at {xs.data_ptr() % (1 << 30) >> 20} MB mod 1 GB)"]
        for name, run in (
                ("layernorm", lambda k: k.layer_norm[(rows,)](xs, w, bias, out, xs.stride(0), cols, 1e-5, BLOCK=4096,
                                                              num_warps=8)),
                ("softmax", lambda k: k.softmax[(rows,)](xs, out, xs.stride(0), cols, BLOCK=4096, num_warps=8))):
            rates = []
            for module in (tri, ref, tri, ref):
                ms = do_bench(lambda: run(module), warmup=25, rep=150, return_mode="median")
                rates.append(f"{amount / ms / 1e6:.0f}")
            line.append(f"{name} tritium {rates[0]}/{rates[2]} triton {rates[1]}/{rates[3]}")
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()
