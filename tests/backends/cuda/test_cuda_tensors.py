"""Kernels on CUDA tensors (torch), checked against torch: what runs only where there is a GPU.

Without a GPU these tests are skipped; the CUDA backend's code generation is still checked in CI by
tests/backends/cuda/test_cuda_ptx.py, and the execution tests (tests/execution/) run on the GPU too.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.backends import registry  # noqa: E402
from test_cuda_ptx import _add, _batched_dot, _dot_as, _matmul, _softmax  # noqa: E402

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


# tl.dot on the tensor cores (backends/cuda/mma.py) ---------------------------------------------------------
# The inputs are exact in their type (fp16, bf16, or fp32 truncated to tf32 as the IR spec says), and
# the products of two of them are exact in fp32 (at most 22 significant bits), so the only error is
# the fp32 accumulation. The tensor cores add each chunk of products aligned to the largest and
# truncated, then into the accumulator: at most about one fp32 ulp (2^-23 relative) of the largest
# term per product and per addition, so |c - exact| <= 2 (K + 1) 2^-23 (|a| @ |b| + |c0|)
# elementwise, what _assert_accumulated checks against torch's fp64 matmul of the same inputs.
_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "tf32x3": torch.float32}


def _tf32(t):
    """fp32 values with the low 13 mantissa bits dropped (what the IR spec's tf32 dot multiplies)."""
    return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


def _assert_accumulated(c, a, b, c0=None, k=None, extra=0.0):
    """``c`` is ``a @ b (+ c0)`` (exact inputs) within the fp32 accumulation bound above."""
    a, b = a.double(), b.double()
    k = a.shape[-1] if k is None else k
    exact = torch.matmul(a, b) + (0 if c0 is None else c0.double())
    scale = torch.matmul(a.abs(), b.abs()) + (0 if c0 is None else c0.double().abs())
    bound = (2 * (k + 1) * 2.0 ** -23 + extra) * scale + 1e-30
    excess = ((c.double() - exact).abs() - bound).max().item()
    assert excess <= 0, f"error beyond the bound by {excess:.3e} (largest |exact| {exact.abs().max().item():.3e})"


def _dot_inputs(kind, m, n, k, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=generator).to(_TORCH[kind])
    b = torch.randn(k, n, device="cuda", generator=generator).to(_TORCH[kind])
    return a, b


@needs_gpu
@pytest.mark.parametrize("wgmma", [False, True])
@pytest.mark.parametrize("kind", ["fp16", "bf16", "tf32"])
@pytest.mark.parametrize("m,n,k,num_warps", [(16, 16, 16, 4), (16, 8, 16, 4), (64, 64, 32, 4), (128, 128, 64, 8),
                                             (32, 128, 16, 4), (128, 32, 32, 4), (64, 64, 16, 1), (16, 16, 1024, 4),
                                             (64, 256, 16, 4), (128, 64, 128, 4)])
def test_dots_on_the_tensor_cores_match_an_fp64_product(kind, m, n, k, num_warps, wgmma):
    """mma.sync, and wgmma where it applies (fp16/bf16, whole warpgroups of 64 rows, on sm_90)."""
    a, b = _dot_inputs(kind, m, n, k, seed=m * 7 + n * 3 + k)
    c = torch.full((m, n), float("nan"), device="cuda")
    _dot_as[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="tf32", OUT=tl.float32, num_warps=num_warps, wgmma=wgmma)
    if kind == "tf32":
        a, b = _tf32(a), _tf32(b)
    _assert_accumulated(c, a, b)


@needs_gpu
def test_tf32x3_dot_on_the_tensor_cores_is_near_fp32():
    m = n = k = 64
    a, b = _dot_inputs("tf32x3", m, n, k, seed=5)
    c = torch.empty(m, n, device="cuda")
    _dot_as[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="tf32x3", OUT=tl.float32)
    # the remainders' product (2^-22 of each term) is what tf32x3 leaves out
    _assert_accumulated(c, a, b, extra=2.0 ** -21)


@needs_gpu
def test_an_fp16_result_of_a_tensor_core_dot_is_rounded_once():
    m, n, k = 64, 64, 64
    a, b = _dot_inputs("fp16", m, n, k, seed=6)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    _dot_as[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="tf32", OUT=tl.float16)
    exact = a.double() @ b.double()
    # the fp32 accumulation's bound, then one rounding to fp16 (half an fp16 ulp: 2^-11 relative)
    bound = 2 * (k + 1) * 2.0 ** -23 * (a.double().abs() @ b.double().abs()) + 2.0 ** -11 * exact.abs() * 1.01
    assert ((c.double() - exact).abs() <= bound + 2.0 ** -24).all()


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8])
def test_int8_dots_on_the_tensor_cores_are_exact(dtype):
    m, n, k = 64, 32, 64
    low, high = (-128, 128) if dtype == torch.int8 else (0, 256)
    a = torch.randint(low, high, (m, k), device="cuda", dtype=dtype)
    b = torch.randint(low, high, (k, n), device="cuda", dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=torch.int32)
    _dot_as[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="ieee", OUT=tl.int32)
    assert torch.equal(c.cpu().long(), a.cpu().long() @ b.cpu().long())


@needs_gpu
@pytest.mark.parametrize("z,m,n,k", [(2, 32, 32, 16), (4, 16, 16, 32), (8, 64, 16, 16)])
def test_batched_dots_on_the_tensor_cores(z, m, n, k):
    generator = torch.Generator(device="cuda").manual_seed(z + m + n + k)
    a = torch.randn(z, m, k, device="cuda", generator=generator).half()
    b = torch.randn(z, k, n, device="cuda", generator=generator).half()
    c = torch.full((z, m, n), float("nan"), device="cuda")
    _batched_dot[(1,)](a, b, c, Z=z, M=m, N=n, K=k)
    _assert_accumulated(c, a, b)


def _run_matmul(a, b, c, block_m, block_n, block_k, num_warps, precision, **options):
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _matmul[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                  BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, PRECISION=precision,
                  num_warps=num_warps, **options)


@needs_gpu
@pytest.mark.parametrize("kind", ["fp16", "bf16", "tf32"])
@pytest.mark.parametrize("m,n,k", [(512, 512, 512), (500, 300, 200)])
@pytest.mark.parametrize("blocks,num_warps", [((128, 128, 32), 4), ((64, 64, 32), 4), ((128, 64, 64), 8)])
def test_the_tiled_matmul_on_the_tensor_cores(kind, m, n, k, blocks, num_warps):
    a, b = _dot_inputs(kind, m, n, k, seed=m + n + k)
    c = torch.full((m, n), float("nan"), device="cuda")
    _run_matmul(a, b, c, *blocks, num_warps, "tf32" if kind == "tf32" else "ieee")
    if kind == "tf32":
        a, b = _tf32(a), _tf32(b)
    _assert_accumulated(c, a, b)


@needs_gpu
@pytest.mark.parametrize("wgmma", [False, True])
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("m,n,k", [(256, 256, 4096 + 16), (200, 136, 32), (128, 384, 64), (128, 256, 0),
                                   (300, 264, 48), (64, 128, 96)])
def test_the_pipelined_matmul(num_stages, m, n, k, wgmma):
    """The K loop's operand loads run num_stages - 1 iterations ahead (pipeline.py): a K tail inside a
    tile, fewer iterations than stages (one, two), none at all, partial M and N blocks; with mma.sync
    and with Hopper's wgmma (on an sm_90 GPU; elsewhere the option changes nothing)."""
    a, b = _dot_inputs("bf16", m, n, k, seed=m + n + k + num_stages)
    c = torch.full((m, n), float("nan"), device="cuda")
    _run_matmul(a, b, c, 128, 128, 32, 4, "ieee", num_stages=num_stages, wgmma=wgmma)
    _assert_accumulated(c, a, b)


@needs_gpu
def test_the_tiled_matmul_with_an_fp16_result():
    m = n = k = 512
    a, b = _dot_inputs("fp16", m, n, k, seed=11)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    _run_matmul(a, b, c, 128, 128, 32, 4, "ieee")
    exact = a.double() @ b.double()
    bound = 2 * (k + 1) * 2.0 ** -23 * (a.double().abs() @ b.double().abs()) + 2.0 ** -11 * exact.abs() * 1.01
    assert ((c.double() - exact).abs() <= bound + 2.0 ** -24).all()


@needs_gpu
def test_the_active_driver_is_the_gpus(monkeypatch):
    driver = triton.runtime.driver  # the DriverConfig, as in Triton
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    active = driver.active
    assert active.get_current_target().backend == "cuda"
    major, minor = torch.cuda.get_device_capability()
    assert active.get_current_target().arch == 10 * major + minor
    device = active.get_active_torch_device()
    assert device.type == "cuda" and device.index == torch.cuda.current_device()
    properties = active.utils.get_device_properties(device.index)
    reference = torch.cuda.get_device_properties(device.index)
    assert properties["multiprocessor_count"] == reference.multi_processor_count
    assert properties["warpSize"] == 32 and properties["max_num_regs"] == 65536
    assert properties["max_shared_mem"] >= 48 * 1024
    assert active.get_current_stream() == torch.cuda.current_stream().cuda_stream
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")  # a host backend: scripts allocate on the host
    assert driver.active.get_current_target().backend == "cpu"


@needs_gpu
def test_a_loaded_kernel_reports_its_registers_and_shared_memory():
    x = torch.randn(4, 4096, device="cuda")
    compiled = _softmax_kernel.warmup(x, x, x.stride(0), 4096, BLOCK=4096, num_warps=8, grid=(1,))
    compiled._init_handles()
    assert compiled.function and 16 <= compiled.n_regs <= 255 and compiled.n_spills == 0
    # the cross-warp reductions meet in shared memory: what the backend sized for them
    assert compiled.metadata.shared == compiled.executable.shared_bytes > 0


@needs_gpu
def test_do_bench_times_the_gpu_work():
    x = torch.randn(1 << 26, device="cuda")
    out = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: _add_kernel[(x.numel() // 1024,)](x, x, out, x.numel(), BLOCK=1024))
    # 768 MB moved: at least 0.1 ms on any GPU this runs on, and well under a second
    assert 0.1 < ms < 1000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        _add_kernel[(x.numel() // 1024,)](x, x, out, x.numel(), BLOCK=1024)
    end.record()
    end.synchronize()
    assert abs(ms - start.elapsed_time(end) / 10) < 0.5 * ms


@needs_gpu
@pytest.mark.parametrize("load,store,evict", [(".cg", ".cs", ""), (".ca", ".wt", ""), (".cv", ".wb", ""),
                                              ("", "", "evict_last"), (".cg", "", "evict_first")])
@pytest.mark.parametrize("n", [4096, 1000])
def test_hinted_loads_and_stores_copy_exactly(load, store, evict, n):
    from test_cuda_ptx import _hinted_copy

    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    _hinted_copy[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, LOAD=load, STORE=store, EVICT=evict)
    assert torch.equal(out, x)


@needs_gpu
def test_inline_asm_runs_the_asm_itself():
    from test_cuda_ptx import _asm_bytes_and_floats, _asm_half2, _asm_tanh

    x = torch.randn(1024, device="cuda") * 3
    out = torch.empty_like(x)
    _asm_tanh[(1,)](x, out, BLOCK=1024)
    exact = torch.tanh(x.double())
    # PTX ISA: tanh.approx.f32's maximum relative error is 2^-10.987
    assert ((out.double() - exact).abs() <= 2.0 ** -10.987 * exact.abs() + 1e-45).all()
    a = torch.randint(0, 256, (512,), device="cuda", dtype=torch.uint8)
    b = torch.randn(512, device="cuda") * 200
    c, d = torch.empty(512, device="cuda", dtype=torch.int32), torch.empty(512, device="cuda")
    _asm_bytes_and_floats[(1,)](a, b, c, d, BLOCK=512)
    assert torch.equal(c, a.to(torch.int32)) and torch.equal(d, torch.maximum(a.float(), b))
    h1, h2 = torch.randn(1024, device="cuda").half(), torch.randn(1024, device="cuda").half()
    h = torch.empty_like(h1)
    _asm_half2[(1,)](h1, h2, h, BLOCK=1024, PACK=2, CONSTRAINTS="=r,r,r")
    assert torch.equal(h, h1 + h2)


@needs_gpu
def test_a_program_of_1024_threads_with_many_registers_launches():
    # 64 elements per thread: without .reqntid ptxas gave it 96 registers, more than 1024 threads have
    x = torch.randn(4, 65536, device="cuda")
    out = torch.empty_like(x)
    _softmax_kernel[(4,)](x, out, x.stride(0), 65536, BLOCK=65536, num_warps=32)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-9)
