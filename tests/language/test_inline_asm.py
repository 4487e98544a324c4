"""tl.inline_asm_elementwise: the table of PTX instructions emulated on the host, each against its
PTX ISA definition computed here in numpy (bit for bit where the ISA defines the result; within
the documented error of an approximate instruction otherwise). On the CUDA backend (the suite on a
GPU) the same tests run the instructions themselves."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def _unary_f32(x_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise(ASM, "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@triton.jit
def _binary_u32(a_ptr, b_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r", [a, b], dtype=tl.uint32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y.to(tl.int32, bitcast=True))


@triton.jit
def _ternary_u32(a_ptr, b_ptr, c_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs).to(tl.uint32, bitcast=True)
    b = tl.load(b_ptr + offs).to(tl.uint32, bitcast=True)
    c = tl.load(c_ptr + offs).to(tl.uint32, bitcast=True)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r,r", [a, b, c], dtype=tl.uint32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y.to(tl.int32, bitcast=True))


N = 256
RNG = np.random.default_rng(0)
FLOATS = np.concatenate([RNG.standard_normal(N - 8) * 4, [0.0, -0.0, 1e-40, -1e-39, 30.0, -30.0, 126.5, -150.0]])
FLOATS = FLOATS.astype(np.float32)
WORDS = [RNG.integers(-2**31, 2**31, N).astype(np.int32) for _ in range(3)]


def _u(x):
    return x.view(np.uint32).astype(np.uint64)


def test_tanh_approx_is_within_the_instructions_error(backend):
    out = torch.zeros(N)
    _unary_f32[(1,)](torch.from_numpy(FLOATS), out, ASM="tanh.approx.f32 $0, $1;", N=N)
    exact = np.tanh(FLOATS.astype(np.float64))
    # PTX ISA: maximum relative error 2^-10.987 (an H200's result is within that of the exact value)
    assert np.all(np.abs(out.numpy() - exact) <= 2.0 ** -10.987 * np.abs(exact) + 1e-45)
    if backend != "cuda":  # the host's emulation rounds tanh correctly; a GPU runs the instruction itself
        assert np.all(np.abs(out.numpy() - exact) <= np.spacing(np.abs(exact).astype(np.float32)))


@pytest.mark.parametrize("ftz", [False, True])
def test_ex2_and_rcp(ftz, backend):
    x = torch.from_numpy(FLOATS)
    out = torch.zeros(N)
    suffix = ".ftz" if ftz else ""
    _unary_f32[(1,)](x, out, ASM=f"ex2.approx{suffix}.f32 $0, $1;", N=N)
    wide = FLOATS.astype(np.float64)
    if ftz:
        wide = np.where(np.abs(wide) < 2.0 ** -126, np.copysign(0.0, wide), wide)
    exact = np.exp2(wide)
    if ftz:
        exact = np.where(exact < 2.0 ** -126, 0.0, exact)
    assert np.all(np.abs(out.numpy() - exact) <= 2 * np.spacing(exact.astype(np.float32)))  # PTX: 2 ulp
    _unary_f32[(1,)](x, out, ASM=f"rcp.approx{suffix}.f32 $0, $1;", N=N)
    with np.errstate(divide="ignore"):
        exact = 1.0 / wide
    if ftz:
        exact = np.where(np.abs(exact) < 2.0 ** -126, np.copysign(0.0, exact), exact)
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float32)  # 1 / 1e-40 overflows fp32
    finite = np.isfinite(rounded)
    assert np.all(np.abs(out.numpy()[finite] - exact[finite]) <= np.spacing(np.abs(rounded[finite])))  # PTX: 1 ulp
    assert np.array_equal(out.numpy()[~finite], rounded[~finite])


def test_cvt_rn_bf16x2_packs_two_rounded_halves(backend):
    a = torch.from_numpy(FLOATS)
    b = torch.from_numpy(-FLOATS[::-1].copy())
    out = torch.zeros(N, dtype=torch.int32)
    _binary_u32[(1,)](a.view(torch.int32), b.view(torch.int32), out, ASM="cvt.rn.bf16x2.f32 $0, $1, $2;", N=N)
    # as floats: reinterpret the words the kernel loaded back to fp32 first
    halves = lambda v: _u(torch.from_numpy(v).bfloat16().view(torch.int16).numpy().astype(np.int32)) & 0xFFFF
    assert np.array_equal(_u(out.numpy()), (halves(FLOATS) << 16) | halves(-FLOATS[::-1].copy()))


@triton.jit
def _cvt_floats(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f", [tl.load(a_ptr + offs),
                                  tl.load(b_ptr + offs)], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


def test_cvt_rn_bf16x2_on_float_operands(backend):
    b = -FLOATS[::-1].copy()
    out = torch.zeros(N, dtype=torch.int32)
    _cvt_floats[(1,)](torch.from_numpy(FLOATS), torch.from_numpy(b), out, N=N)
    halves = lambda v: _u(torch.from_numpy(v).bfloat16().view(torch.int16).numpy().astype(np.int32)) & 0xFFFF
    assert np.array_equal(_u(out.numpy()), (halves(FLOATS) << 16) | halves(b))


def _prmt(a, b, c):
    source = (int(b) << 32) | int(a)
    result = 0
    for i in range(4):
        sel = (int(c) >> (4 * i)) & 0xF
        byte = (source >> ((sel & 7) * 8)) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        result |= byte << (8 * i)
    return result


def test_prmt_lop3_and_mul_hi_are_bit_exact(backend):
    a, b, c = (torch.from_numpy(w) for w in WORDS)
    ua, ub, uc = (_u(w) for w in WORDS)
    out = torch.zeros(N, dtype=torch.int32)
    _ternary_u32[(1,)](a, b, c, out, ASM="prmt.b32 $0, $1, $2, $3;", N=N)
    assert _u(out.numpy()).tolist() == [_prmt(x, y, z) for x, y, z in zip(ua, ub, uc)]
    for lut in (0x96, 0xE8, 0x00, 0xFF, 0xF0, 0x1E):
        _ternary_u32[(1,)](a, b, c, out, ASM=f"lop3.b32 $0, $1, $2, $3, {lut:#x};", N=N)
        expected = np.zeros(N, dtype=np.uint64)
        for bit in range(32):
            index = (((ua >> bit) & 1) << 2) | (((ub >> bit) & 1) << 1) | ((uc >> bit) & 1)
            expected |= ((lut >> index) & 1).astype(np.uint64) << bit
        assert np.array_equal(_u(out.numpy()), expected), hex(lut)
    _binary_u32[(1,)](a, b, out, ASM="mul.hi.u32 $0, $1, $2;", N=N)
    assert np.array_equal(_u(out.numpy()), (ua * ub) >> 32)
    _binary_u32[(1,)](a, b, out, ASM="mul.hi.s32 $0, $1, $2;", N=N)
    signed = (WORDS[0].astype(np.int64) * WORDS[1].astype(np.int64)) >> 32
    assert np.array_equal(out.numpy(), signed.astype(np.int32))


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_sin_and_cos_approx_are_within_the_instructions_error(fn, ftz, backend):
    out = torch.zeros(N)
    suffix = ".ftz" if ftz else ""
    _unary_f32[(1,)](torch.from_numpy(FLOATS), out, ASM=f"{fn}.approx{suffix}.f32 $0, $1;", N=N)
    wide = FLOATS.astype(np.float64)
    if ftz:  # subnormal inputs read as zeros of their sign
        wide = np.where(np.abs(wide) < 2.0 ** -126, np.copysign(0.0, wide), wide)
    exact = getattr(np, fn)(wide)
    got = out.numpy().astype(np.float64)
    # PTX ISA: absolute error at most 2^-20.5 over [-100 pi, 100 pi] (every input here)
    assert np.all(np.abs(got - exact) <= 2.0 ** -20.5)
    if backend != "cuda":  # the host gives tl.sin / tl.cos: within 4 ulp of the fp64 value, signed zeros kept
        assert np.all(np.abs(got - exact) <= 4 * np.spacing(np.abs(exact).astype(np.float32)))
        assert np.array_equal(np.signbit(got[got == 0]), np.signbit(exact[got == 0]))


@triton.jit
def _unknown_asm(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=f,f", [tl.load(x_ptr + offs)],  # ERR
                                  dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr + offs, y)


@pytest.mark.parametrize("host_backend", ["interpreter", "cpu"])
def test_other_asm_is_an_error_on_the_host_naming_the_instruction_and_the_line(host_backend, monkeypatch):
    # on the host backends (the CUDA backend emits any asm: tests/backends/cuda/test_cuda_tensors.py)
    monkeypatch.setenv("TRITIUM_BACKEND", host_backend)
    with pytest.raises(triton.CompilationError) as info:
        _unknown_asm[(1,)](torch.zeros(4), N=4)
    message = str(info.value)
    assert "'lg2.approx.f32'" in message and "# ERR" in message and "tanh.approx.f32" in message
    assert "CUDA backend" in message and "tl.inline_asm_elementwise(" in message  # the caret's line


# against an H200 ------------------------------------------------------------------------------------
H200 = np.load(__import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "inline_asm_h200.npz")


@pytest.mark.parametrize("asm", ["tanh.approx.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "rcp.approx.f32",
                                 "rcp.approx.ftz.f32", "rcp.rn.f32"])
def test_approximate_instructions_match_an_h200_within_their_documented_error(asm, backend):
    """What an H200 gave (benchmarks/gpu/inline_asm_reference.py, Triton 3.6) on the same inputs:
    tritium's result is within the instruction's documented error of it (twice the error bound,
    as both sit within it of the exact value), and equal where the H200's is exact or special."""
    out = torch.zeros(N)
    _unary_f32[(1,)](torch.from_numpy(FLOATS), out, ASM=f"{asm} $0, $1;", N=N)
    ours, gpu = out.numpy().astype(np.float64), H200[asm].astype(np.float64)
    special = ~np.isfinite(gpu) | (gpu == 0)
    assert np.array_equal(ours[special], gpu[special])
    ulp = np.spacing(np.abs(gpu[~special]).astype(np.float32)).astype(np.float64)
    distance = np.abs(ours[~special] - gpu[~special])
    bound = {"tanh.approx.f32": 2 * 2.0 ** -10.987 * np.abs(gpu[~special]), "rcp.rn.f32": 0 * ulp}.get(asm, 3 * ulp)
    assert np.all(distance <= bound), (asm, distance.max())


def test_exact_instructions_match_an_h200_bit_for_bit(backend):
    a, b, c = (torch.from_numpy(w) for w in WORDS)
    out = torch.zeros(N, dtype=torch.int32)
    for asm in ("mul.hi.u32", "mul.hi.s32", "mul.lo.u32"):
        _binary_u32[(1,)](a, b, out, ASM=f"{asm} $0, $1, $2;", N=N)
        assert np.array_equal(out.numpy(), H200[asm]), asm
    bits_b = torch.from_numpy(-FLOATS[::-1].copy()).view(torch.int32)
    _binary_u32[(1,)](torch.from_numpy(FLOATS).view(torch.int32), bits_b, out, ASM="cvt.rn.bf16x2.f32 $0, $1, $2;", N=N)
    assert np.array_equal(out.numpy(), H200["cvt.rn.bf16x2.f32"])
    _ternary_u32[(1,)](a, b, c, out, ASM="prmt.b32 $0, $1, $2, $3;", N=N)
    assert np.array_equal(out.numpy(), H200["prmt.b32"])
    for lut in (0x96, 0xE8, 0x00, 0xFF, 0xF0, 0x1E):
        _ternary_u32[(1,)](a, b, c, out, ASM=f"lop3.b32 $0, $1, $2, $3, {lut:#x};", N=N)
        assert np.array_equal(out.numpy(), H200[f"lop3.b32 {lut:#x}"]), hex(lut)
