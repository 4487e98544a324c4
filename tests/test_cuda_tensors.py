"""Kernels on CUDA tensors (torch), checked against torch: what runs only where there is a GPU.

Without a GPU these tests are skipped; the CUDA backend's code generation is still checked in CI by
tests/test_cuda_ptx.py, and the whole suite runs on the GPU with TRITIUM_BACKEND=cuda.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.backends import registry  # noqa: E402

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available() or not registry.get("cuda").is_available(),
                               reason="no CUDA GPU here")


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=m)


@needs_gpu
@pytest.mark.parametrize("n", [1, 1000, 4096, 100_003])
def test_add_on_cuda_tensors(n):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    assert torch.equal(out, x + y)


@needs_gpu
@pytest.mark.parametrize("rows,cols", [(1, 7), (64, 1000), (300, 4096)])
def test_softmax_on_cuda_tensors(rows, cols):
    x = torch.randn(rows, cols, device="cuda") * 4
    out = torch.full_like(x, float("nan"))
    _softmax_kernel[(rows,)](x, out, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_launches_on_torchs_current_stream():
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        _add_kernel[(1024,)](x, x, out, x.numel(), BLOCK=1024)
    stream.synchronize()
    assert torch.equal(out, 2 * x)


@needs_gpu
def test_cuda_and_cpu_tensors_together_are_refused():
    x = torch.randn(16, device="cuda")
    with pytest.raises(triton.LaunchError):
        _add_kernel[(1,)](x, torch.randn(16), x, 16, BLOCK=16)
