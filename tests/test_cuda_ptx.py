"""The CUDA backend's code generation, checked without a GPU: representative kernels compiled to PTX
through LLVM's NVPTX target, assembled by ptxas (from the nvidia-cuda-nvcc wheel the test extras
install), and the instructions that make them fast and give Triton's bits looked for.

On a machine with a GPU the whole suite also runs on the backend (TRITIUM_BACKEND=cuda); these
tests are what CI, which has none, can check.
"""
from __future__ import annotations

import re

import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends.base import GPUTarget
from tritium.backends.cuda import nvptx
from tritium.compiler import ASTSource

pytest.importorskip("llvmlite")

HOPPER = GPUTarget("cuda", 90, 32)
AMPERE = GPUTarget("cuda", 80, 32)


def compile_for(kernel, signature, constexprs=None, target=HOPPER, **options):
    compiled = triton.compile(ASTSource(kernel, signature, constexprs=constexprs or {}), target=target,
                              options=options)
    if nvptx.ptxas_path() is not None:
        assert compiled.asm["cubin"], "ptxas is here, so the backend must have assembled a cubin"
    return compiled


def body(compiled) -> str:
    ptx = compiled.asm["ptx"]
    return ptx[ptx.index(".entry"):]


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


_ADD = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16", "BLOCK": "constexpr"}


def test_aligned_contiguous_accesses_are_16_byte_vectors():
    ptx = body(compile_for(_add, _ADD, {"BLOCK": 1024}))
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert not re.search(r"ld\.global\.b32", ptx)


def test_unaligned_accesses_fall_back_to_scalar_ones():
    signature = dict(_ADD, n="i32", x_ptr="*fp32", y_ptr="*fp32", out_ptr="*fp32")
    ptx = body(compile_for(_add, signature, {"BLOCK": 256}))
    assert "ld.global.b32" in ptx and "v4" not in ptx


def test_the_target_and_ptx_version_follow_the_architecture():
    hopper = compile_for(_add, _ADD, {"BLOCK": 128}).asm["ptx"]
    ampere = compile_for(_add, _ADD, {"BLOCK": 128}, target=AMPERE).asm["ptx"]
    assert ".target sm_90a" in hopper and ".version 8.0" in hopper
    assert ".target sm_80" in ampere


@triton.jit
def _math(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif FN == "div":
        r = x / y
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "fma":
        r = x * y + x
    else:
        r = tl.log(x) + tl.sin(y) + tl.erf(x)
    tl.store(out_ptr + offs, r)


# The instructions Triton 3.6 emits for each op on an H200 (benchmarks/gpu/triton_instruction_choices.py).
@pytest.mark.parametrize("fn,instruction", [
    ("exp", "ex2.approx.f32"), ("exp2", "ex2.approx.ftz.f32"), ("sqrt", "sqrt.approx.ftz.f32"),
    ("rsqrt", "rsqrt.approx.ftz.f32"), ("sqrt_rn", "sqrt.rn.f32"), ("div", "div.full.f32"), ("div_rn", "div.rn.f32"),
    ("floor", "cvt.rmi.ftz.f32.f32"), ("fma", "fma.rn.f32")])
def test_math_uses_tritons_instructions(fn, instruction):
    signature = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr",
                 "FN": "constexpr"}
    ptx = body(compile_for(_math, signature, {"BLOCK": 128, "FN": fn}))
    assert instruction in ptx


def test_libdevice_is_linked_in_and_nothing_else_is_left_to_resolve():
    signature = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "BLOCK": "constexpr",
                 "FN": "constexpr"}
    compiled = compile_for(_math, signature, {"BLOCK": 128, "FN": "libm"})
    assert "__nv_logf" in compiled.asm["llir"]
    assert ".extern" not in compiled.asm["ptx"]


@triton.jit
def _softmax(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=m)


def test_reductions_shuffle_within_warps_and_meet_in_shared_memory():
    signature = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "stride": "i32:16", "n": "i32", "BLOCK": "constexpr"}
    compiled = compile_for(_softmax, signature, {"BLOCK": 4096}, num_warps=8)
    ptx = body(compiled)
    assert ptx.count("shfl.sync.bfly.b32") >= 10  # five lane bits, two reductions
    assert "bar.sync" in ptx and "st.shared" in ptx
    assert ".maxntid" not in ptx or "256" in ptx


@triton.jit
def _row_ops(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    centered = x - tl.sum(x, axis=1)[:, None] / N
    t = tl.trans(centered)
    s = tl.cumsum(x, axis=1)
    tl.store(out_ptr + rows * N + cols, centered + s + tl.flip(x, 1))
    tl.store(out_ptr + M * N + cols.reshape(N, 1) * M + rows.reshape(1, M), t)


def test_two_dimensional_shape_ops_and_scans_compile():
    compile_for(_row_ops, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "M": "constexpr", "N": "constexpr"},
                {"M": 16, "N": 64})


@triton.jit
def _everything_else(x_ptr, i_ptr, counter_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float16).to(tl.bfloat16).to(tl.float8e4nv).to(tl.float32)
    i = tl.load(i_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(n):
        if k % 2 == 0:
            acc += x * k
        else:
            acc -= tl.sort(x)
    tl.atomic_add(counter_ptr + (i & 7), 1)
    seed = tl.program_id(0)
    r = tl.rand(seed, offs)
    tl.device_assert(i >= 0, "negative index")
    tl.store(out_ptr + offs, acc + r + tl.gather(x, i & (BLOCK - 1), 0) + tl.histogram(i & (BLOCK - 1), BLOCK))
    tl.device_print("acc", acc)


def test_casts_loops_atomics_random_sort_gather_histogram_assert_and_print_compile():
    signature = {"x_ptr": "*fp32:16", "i_ptr": "*i32:16", "counter_ptr": "*i32:16", "out_ptr": "*fp32:16",
                 "n": "i32", "BLOCK": "constexpr"}
    compiled = compile_for(_everything_else, signature, {"BLOCK": 64})
    ptx = body(compiled)
    assert "atom.global" in ptx and "vprintf" in ptx
    assert "atom.sys" not in ptx  # the GPU scope, never the system's


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    tl.store(c_ptr + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dot_compiles(dtype):
    compile_for(_dot, {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": "*fp32:16", "M": "constexpr",
                       "N": "constexpr", "K": "constexpr"}, {"M": 64, "N": 64, "K": 32})


def test_debug_mode_compiles_a_bounds_checked_variant():
    compiled = compile_for(_add, _ADD, {"BLOCK": 1024})
    checked = compiled.executable.make_checked()
    assert checked.checks and not compiled.executable.checks
    ptx = checked.asm["ptx"]
    entry = ptx[ptx.index(".entry"):ptx.index(")", ptx.index(".entry"))]
    # the four arguments, each pointer's [low, high) byte range, then the error record
    assert entry.count(".param") == 4 + 2 * 3 + 1
    assert re.search(r"atom\.relaxed\.gpu\.global\.cas\.b64", ptx)  # the first failing program claims the record
    assert "v4" not in body(checked)  # lane by lane, each checked


def test_the_stages_of_the_named_backend_without_a_gpu(monkeypatch):
    """`TRITIUM_BACKEND=cuda tritium ir FILE:KERNEL --stage ptx` (kernel.stages) compiles for the GPU
    where there is none."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cuda")
    stages = _add.stages("*fp32:16,*fp32:16,*fp32:16,i32:16", BLOCK=1024)
    assert set(stages) >= {"ttir", "llir", "ptx", "cubin"}
    assert "ptx_kernel" in stages["llir"] and "ld.global.v4.b32" in stages["ptx"]
