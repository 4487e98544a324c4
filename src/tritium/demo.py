"""``tritium demo``: real kernels on the best available backend, each checked against torch."""
from __future__ import annotations

import time

import tritium as triton
import tritium.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def gelu_forward_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offsets, x * cdf, mask=mask)


@triton.jit
def gelu_backward_kernel(grad_out_ptr, x_ptr, grad_in_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    grad_out = tl.load(grad_out_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = 0.3989422804014327 * tl.exp(-0.5 * x * x)
    tl.store(grad_in_ptr + offsets, grad_out * (cdf + x * pdf), mask=mask)


@triton.jit
def gelu_backward_forgets_grad_output(grad_out_ptr, x_ptr, grad_in_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = 0.3989422804014327 * tl.exp(-0.5 * x * x)
    tl.store(grad_in_ptr + offsets, cdf + x * pdf, mask=mask)  # the chain-rule trap


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * row_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, centered * tl.rsqrt(var + eps) * w + b, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _time(fn, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> int:
    import torch

    torch.manual_seed(0)
    print("tritium demo: real Triton kernels, run by tritium and checked against torch")
    print("backend: interpreter (numpy, every memory access bounds-checked) -- the native CPU and CUDA "
          "backends are not built yet, so it is the best one available here\n")
    rows = []

    n = 1 << 20
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    run = lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)  # noqa: E731
    t = _time(run)
    rows.append(("vector add", f"{n} fp32", (out - (x + y)).abs().max().item(), t, _time(lambda: x + y)))

    n = 100_000
    x = torch.randn(n)
    out = torch.empty(n)
    run = lambda: gelu_forward_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)  # noqa: E731
    t = _time(run)
    ref = torch.nn.functional.gelu(x.double()).float()
    rows.append(("GELU forward", f"{n} fp32", (out - ref).abs().max().item(), t,
                 _time(lambda: torch.nn.functional.gelu(x))))

    grad_out = torch.randn(n)
    grad_in = torch.empty(n)
    run = lambda: gelu_backward_kernel[(triton.cdiv(n, 1024),)](grad_out, x, grad_in, n, BLOCK=1024)  # noqa: E731
    t = _time(run)
    xr = x.double().requires_grad_(True)
    torch.nn.functional.gelu(xr).backward(grad_out.double())
    rows.append(("GELU backward", f"{n} fp32", (grad_in.double() - xr.grad).abs().max().item(), t, float("nan")))

    x2 = torch.randn(512, 1000)
    out2 = torch.empty_like(x2)
    run = lambda: softmax_kernel[(512,)](x2, out2, 1000, x2.stride(0), BLOCK=1024)  # noqa: E731
    t = _time(run)
    rows.append(("softmax (rows)", "512x1000 fp32", (out2 - torch.softmax(x2, 1)).abs().max().item(), t,
                 _time(lambda: torch.softmax(x2, 1))))

    w, b = torch.randn(1000), torch.randn(1000)
    run = lambda: layernorm_kernel[(512,)](x2, w, b, out2, 1000, 1e-5, BLOCK=1024)  # noqa: E731
    t = _time(run)
    ref = torch.nn.functional.layer_norm(x2, (1000,), w, b, 1e-5)
    rows.append(("layernorm", "512x1000 fp32", (out2 - ref).abs().max().item(), t,
                 _time(lambda: torch.nn.functional.layer_norm(x2, (1000,), w, b, 1e-5))))

    M, N, K = 200, 300, 250
    a, bm = torch.randn(M, K), torch.randn(K, N)
    c = torch.empty(M, N)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    run = lambda: matmul_kernel[grid](a, bm, c, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)  # noqa: E731
    t = _time(run)
    rows.append(("matmul (tf32 dot)", f"{M}x{K} @ {K}x{N}", (c - a @ bm).abs().max().item(), t,
                 _time(lambda: a @ bm)))

    print(f"{'kernel':<20}{'size':<22}{'max |err| vs torch':>20}{'tritium ms':>12}{'torch ms':>10}")
    for name, size, err, t, tt in rows:
        print(f"{name:<20}{size:<22}{err:>20.3e}{t:>12.2f}{tt:>10.2f}")
    print("\n(matmul's error is the tf32 rounding a GPU's tensor cores also make; input_precision='ieee' removes it)")

    print("\nThe chain-rule trap (chapter 16): a backward kernel that forgets grad_output")
    x = torch.tensor([-1.0, 0.5, 2.0])
    for label, g in (("grad_output = 1", torch.ones(3)), ("grad_output = 2", torch.full((3,), 2.0))):
        good, bad = torch.empty(3), torch.empty(3)
        gelu_backward_kernel[(1,)](g, x, good, 3, BLOCK=4)
        gelu_backward_forgets_grad_output[(1,)](g, x, bad, 3, BLOCK=4)
        xr = x.clone().requires_grad_(True)
        torch.nn.functional.gelu(xr).backward(g)
        print(f"  {label}: correct kernel matches torch: {torch.allclose(good, xr.grad)}, "
              f"buggy kernel matches torch: {torch.allclose(bad, xr.grad)}")
    print("  -> test backward kernels with a non-uniform grad_output; .sum().backward() hides the bug.")

    print("\nAnd a mistake a GPU would not report: an unmasked tail")
    n = 1000
    x = torch.randn(n)
    out = torch.empty(n)

    @triton.jit
    def unmasked_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))

    try:
        unmasked_copy[(triton.cdiv(n, 256),)](x, out, BLOCK=256)
    except triton.OutOfBoundsError as e:
        print("  " + str(e).replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
