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
from test_cuda_ptx import _add, _softmax  # noqa: E402

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available() or not registry.get("cuda").is_available(),
                               reason="no CUDA GPU here")


# the kernels whose PTX test_cuda_ptx.py checks, here run on the GPU
_add_kernel, _softmax_kernel = _add, _softmax


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


@triton.jit
def _unmasked_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@needs_gpu
def test_debug_mode_reports_an_out_of_bounds_load_and_the_gpu_launches_again(monkeypatch):
    x = torch.randn(1000, device="cuda")
    out = torch.zeros(1024, device="cuda")
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    with pytest.raises(triton.OutOfBoundsError) as info:
        _unmasked_copy[(4,)](x, out, BLOCK=256)
    error = info.value
    assert error.tensor == "x_ptr" and error.access == "load" and error.extent == 1000
    assert error.offset >= 1000 and error.program_id == (3, 0, 0)
    monkeypatch.delenv("TRITIUM_DEBUG")
    y = torch.randn(1024, device="cuda")
    _unmasked_copy[(4,)](y, out, BLOCK=256)  # the context survived
    assert torch.equal(out, y)


@triton.jit
def _assert_positive(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")


@needs_gpu
def test_a_failed_device_assert_names_the_program_and_lane():
    x = torch.ones(64, device="cuda")
    x[37] = -1.0
    with pytest.raises(triton.DeviceAssertionError, match=r"program \(0, 0, 0\), lane 37: x must be positive"):
        _assert_positive[(1,)](x, 64, BLOCK=64)
    _assert_positive[(1,)](torch.ones(64, device="cuda"), 64, BLOCK=64)


@needs_gpu
def test_validation_against_the_interpreter_on_cuda_tensors(monkeypatch):
    monkeypatch.setenv("TRITIUM_VALIDATE", "interpreter")
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    out = torch.empty_like(x)
    _add_kernel[(5,)](x, y, out, 5000, BLOCK=1024)
    assert torch.equal(out, x + y)
