"""The same kernels under tritium's CUDA backend and under Triton, side by side on one GPU, with torch.

Run on a machine with a CUDA GPU, Triton and torch: `python benchmarks/cuda_vs_triton.py`. Each kernel's
source is written once and imported twice, once with `import tritium as triton` and once with the real
Triton; both run on the same inputs, the results are checked against torch, and each is timed with
triton.testing.do_bench (median of CUDA-event timings). Reported: GB/s (TFLOP/s for the fp16 matmul), and tritium / Triton as a ratio
of throughputs (1.0 = as fast as Triton); the first call's time (compilation included); the warm launch
overhead of a one-store kernel.
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
def gelu_bwd(x_ptr, grad_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    cdf = 0.5 * (1 + tl.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    tl.store(out_ptr + offs, tl.load(grad_ptr + offs, mask=m) * (cdf + x * pdf), mask=m)


@triton.jit
def rms_norm(x_ptr, w_ptr, out_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=0.0)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(out_ptr + row * stride + offs, x * r * tl.load(w_ptr + offs, mask=m), mask=m)


@triton.jit
def cross_entropy(logits_ptr, target_ptr, loss_ptr, stride, n, BLOCK: tl.constexpr):
    # one program per row, one pass over the vocabulary keeping a running max and sum per lane
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * stride
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        x = tl.load(base + start + tl.arange(0, BLOCK))
        new_m = tl.maximum(m, x)
        s = s * tl.exp(m - new_m) + tl.exp(x - new_m)
        m = new_m
    top = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - top), axis=0)
    target = tl.load(target_ptr + row)
    tl.store(loss_ptr + row, tl.log(total) + top - tl.load(base + target))


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # tutorial 03's kernel for row-major operands whose sizes the blocks divide
    pid = tl.program_id(0)
    programs_m = tl.cdiv(M, BLOCK_M)
    programs_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * programs_n
    first_m = pid // in_group * GROUP_M
    group_m = min(programs_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


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
    import argparse

    import triton
    from triton.testing import do_bench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated words: run the kernels whose names hold one")
    parser.add_argument("--ptx-dir", default="", help="write each kernel's PTX under both compilers here")
    parser.add_argument("--repeat", type=int, default=1, help="time each kernel this many times, alternating")
    arguments = parser.parse_args()

    started = time.perf_counter()
    tri = load("tritium")
    ref = load("triton")
    n = 1 << 28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    rows, cols = 16384, 4096
    xs = torch.randn(rows, cols, device="cuda")
    w, bias = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    grad = torch.randn(n, device="cuda")
    vocab, ce_rows = 131072, 1024
    logits = torch.randn(ce_rows, vocab, device="cuda")
    targets = torch.randint(0, vocab, (ce_rows,), device="cuda")
    size = 4096
    a16 = (torch.randn(size, size, device="cuda") * 0.1).half()
    b16 = (torch.randn(size, size, device="cuda") * 0.1).half()

    def gelu_grad():
        cdf = 0.5 * (1 + torch.erf(x * 0.7071067811865476))
        return grad * (cdf + x * torch.exp(-0.5 * x * x) * 0.3989422804014327)

    # name -> (launch, torch's result, output, bytes or flops moved, unit, tolerance)
    gb, tflop = "GB/s", "TFLOP/s"
    cases = {
        "add fp32 2^28": (lambda k, out: k.add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
                          lambda: x + y, torch.empty_like(x), 3 * n * 4, gb, 2e-5),
        "gelu fwd 2^28": (lambda k, out: k.gelu[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024),
                          lambda: torch.nn.functional.gelu(x), torch.empty_like(x), 2 * n * 4, gb, 2e-5),
        "gelu bwd 2^28": (lambda k, out: k.gelu_bwd[(triton.cdiv(n, 1024),)](x, grad, out, n, BLOCK=1024),
                          gelu_grad, torch.empty_like(x), 3 * n * 4, gb, 2e-5),
        "softmax 16384x4096": (lambda k, out: k.softmax[(rows,)](xs, out, xs.stride(0), cols, BLOCK=4096, num_warps=8),
                               lambda: torch.softmax(xs, 1), torch.empty_like(xs), 2 * rows * cols * 4, gb, 2e-5),
        "layernorm fwd 16384x4096": (lambda k, out: k.layer_norm[(rows,)](xs, w, bias, out, xs.stride(0), cols, 1e-5,
                                                                           BLOCK=4096, num_warps=8),
                                     lambda: torch.nn.functional.layer_norm(xs, (cols,), w, bias, 1e-5),
                                     torch.empty_like(xs), 2 * rows * cols * 4, gb, 2e-5),
        "rmsnorm fwd 16384x4096": (lambda k, out: k.rms_norm[(rows,)](xs, w, out, xs.stride(0), cols, 1e-5,
                                                                       BLOCK=4096, num_warps=8),
                                   lambda: xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + 1e-5) * w,
                                   torch.empty_like(xs), 2 * rows * cols * 4, gb, 2e-5),
        "cross-entropy 1024x128k": (lambda k, out: k.cross_entropy[(ce_rows,)](logits, targets, out, logits.stride(0),
                                                                               vocab, BLOCK=2048, num_warps=8),
                                    lambda: torch.nn.functional.cross_entropy(logits, targets, reduction="none"),
                                    torch.empty(ce_rows, device="cuda"), ce_rows * vocab * 4, gb, 2e-5),
        "matmul fp16 4096^3": (lambda k, out: k.matmul[(triton.cdiv(size, 128) * triton.cdiv(size, 128),)](
                                   a16, b16, out, size, size, size, a16.stride(0), b16.stride(0), out.stride(0),
                                   BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4),
                               lambda: a16 @ b16, torch.empty(size, size, device="cuda", dtype=torch.float16),
                               2 * size ** 3, tflop, 1e-2),
    }
    if arguments.only:
        words = arguments.only.split(",")
        cases = {name: case for name, case in cases.items() if any(word in name for word in words)}
    lines = []
    for name, (run, expected, out, amount, unit, tolerance) in cases.items():
        row = [name, unit]
        scale = 1e6 if unit == gb else 1e9
        first = {}
        for lib, module in (("tritium", tri), ("triton", ref)):
            out.fill_(float("nan"))
            t0 = time.perf_counter()
            compiled = run(module, out)
            torch.cuda.synchronize()
            first[lib] = time.perf_counter() - t0
            torch.testing.assert_close(out, expected(), rtol=tolerance, atol=tolerance)
            if arguments.ptx_dir and getattr(compiled, "asm", None) is not None:
                os.makedirs(arguments.ptx_dir, exist_ok=True)
                with open(os.path.join(arguments.ptx_dir, f"{name.split()[0]}.{lib}.ptx"), "w") as f:
                    f.write(compiled.asm["ptx"])
        rates = {"tritium": [], "triton": []}
        for _ in range(arguments.repeat):  # alternating, so that a drift of the GPU's clock hits both
            for lib, module in (("tritium", tri), ("triton", ref)):
                ms = do_bench(lambda: run(module, out), warmup=50, rep=300, return_mode="median")
                rates[lib].append(amount / ms / scale)
        for lib in ("tritium", "triton"):
            row.append((lib, sorted(rates[lib])[len(rates[lib]) // 2], first[lib]))
        if arguments.repeat > 1:
            print(f"{name}: tritium {' '.join(f'{r:.0f}' for r in rates['tritium'])}; "
                  f"triton {' '.join(f'{r:.0f}' for r in rates['triton'])}", flush=True)
        torch_ms = do_bench(expected, warmup=50, rep=300, return_mode="median")
        row.append(("torch", amount / torch_ms / scale, 0))
        lines.append(row)
    small = torch.zeros(1, device="cuda")
    launch_us = {}
    if arguments.only and "launch" not in arguments.only.split(","):
        launch_us = None
    for lib, module in (("tritium", tri), ("triton", ref)) if launch_us is not None else ():
        for _ in range(100):
            module.tiny[(1,)](small)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            module.tiny[(1,)](small)
        torch.cuda.synchronize()
        launch_us[lib] = (time.perf_counter() - t0) / 2000 * 1e6
    print(f"{'kernel':28} {'unit':8} {'tritium':>9} {'triton':>9} {'torch':>9} {'tritium/triton':>15}"
          f" {'first call s (tritium, triton)':>32}")
    for name, unit, (_, t_rate, t_first), (_, r_rate, r_first), (_, torch_rate, _) in lines:
        print(f"{name:28} {unit:8} {t_rate:9.0f} {r_rate:9.0f} {torch_rate:9.0f} {t_rate / r_rate:15.2f} "
              f"{t_first:15.2f} {r_first:15.2f}")
    if launch_us is not None:
        print(f"warm launch: tritium {launch_us['tritium']:.1f} us, triton {launch_us['triton']:.1f} us "
              f"(ratio {launch_us['tritium'] / launch_us['triton']:.2f})")
    print(f"total {time.perf_counter() - started:.0f} s; torch {torch.__version__}, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}")


if __name__ == "__main__":
    sys.exit(main())
