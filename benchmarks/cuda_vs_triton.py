"""The same kernels under tritium's CUDA backend and under Triton, side by side on one GPU, with torch.

Run on a machine with a CUDA GPU, Triton and torch: `python benchmarks/cuda_vs_triton.py`. Each kernel's
source is written once and imported twice, once with `import tritium as triton` and once with the real
Triton; both run on the same inputs, the results are checked against torch, and each is timed with
triton.testing.do_bench (median of CUDA-event timings). Reported: GB/s, and tritium / Triton as a ratio of
throughputs (1.0 = as fast as Triton). Also: warm launch overhead and cold compile time of one kernel.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time

import torch

KERNELS = '''
import {lib} as triton
import {lib}.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def gelu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


@triton.jit
def softmax(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def layer_norm(x_ptr, w_ptr, b_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    w = tl.load(w_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(out_ptr + row * stride + offs, d * rstd * w + b, mask=m)


@triton.jit
def tiny(x_ptr):
    tl.store(x_ptr, 1.0)
'''


def load(lib: str):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, f"kernels_{lib}.py")
    with open(path, "w") as f:
        f.write(KERNELS.format(lib=lib))
    spec = importlib.util.spec_from_file_location(f"kernels_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    import triton
    from triton.testing import do_bench

    started = time.perf_counter()
    tri = load("tritium")
    ref = load("triton")
    n = 1 << 28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    rows, cols = 16384, 4096
    xs = torch.randn(rows, cols, device="cuda")
    w, bias = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    cases = {
        "add fp32 2^28": (lambda k, out: k.add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
                          lambda: x + y, torch.empty_like(x), 3 * n * 4),
        "gelu fwd 2^28": (lambda k, out: k.gelu[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024),
                          lambda: torch.nn.functional.gelu(x), torch.empty_like(x), 2 * n * 4),
        "softmax 16384x4096": (lambda k, out: k.softmax[(rows,)](xs, out, xs.stride(0), cols, BLOCK=4096, num_warps=8),
                               lambda: torch.softmax(xs, 1), torch.empty_like(xs), 2 * rows * cols * 4),
        "layernorm fwd 16384x4096": (lambda k, out: k.layer_norm[(rows,)](xs, w, bias, out, xs.stride(0), cols, 1e-5,
                                                                           BLOCK=4096, num_warps=8),
                                     lambda: torch.nn.functional.layer_norm(xs, (cols,), w, bias, 1e-5),
                                     torch.empty_like(xs), 2 * rows * cols * 4),
    }
    lines = []
    for name, (run, expected, out, nbytes) in cases.items():
        row = [name]
        for lib, module in (("tritium", tri), ("triton", ref)):
            out.fill_(float("nan"))
            t0 = time.perf_counter()
            run(module, out)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            torch.testing.assert_close(out, expected(), rtol=2e-5, atol=2e-5)
            ms = do_bench(lambda: run(module, out), warmup=50, rep=300, return_mode="median")
            row.append((lib, nbytes / ms / 1e6, first))
        torch_ms = do_bench(expected, warmup=50, rep=300, return_mode="median")
        row.append(("torch", nbytes / torch_ms / 1e6, 0))
        lines.append(row)
    small = torch.zeros(1, device="cuda")
    launch_us = {}
    for lib, module in (("tritium", tri), ("triton", ref)):
        for _ in range(100):
            module.tiny[(1,)](small)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            module.tiny[(1,)](small)
        torch.cuda.synchronize()
        launch_us[lib] = (time.perf_counter() - t0) / 2000 * 1e6
    print(f"{'kernel':28} {'tritium GB/s':>13} {'triton GB/s':>12} {'torch GB/s':>11} {'tritium/triton':>15}"
          f" {'first call s (tritium, triton)':>32}")
    for name, (_, t_gbs, t_first), (_, r_gbs, r_first), (_, torch_gbs, _) in lines:
        print(f"{name:28} {t_gbs:13.0f} {r_gbs:12.0f} {torch_gbs:11.0f} {t_gbs / r_gbs:15.2f} "
              f"{t_first:15.2f} {r_first:15.2f}")
    print(f"warm launch: tritium {launch_us['tritium']:.1f} us, triton {launch_us['triton']:.1f} us "
          f"(ratio {launch_us['tritium'] / launch_us['triton']:.2f})")
    print(f"total {time.perf_counter() - started:.0f} s; torch {torch.__version__}, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}")


if __name__ == "__main__":
    sys.exit(main())
