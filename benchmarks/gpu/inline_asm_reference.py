"""The PTX instructions tritium emulates for tl.inline_asm_elementwise, run by real Triton on a GPU.

    python benchmarks/gpu/inline_asm_reference.py OUT.npz

Computes each instruction of ``tritium/language/inline_asm.py``'s table on the same inputs as
``tests/language/test_inline_asm.py`` (numpy seed 0) with Triton on a CUDA GPU and saves the results;
``tests/data/inline_asm_h200.npz`` holds what an H200 gave, which the suite compares with
tritium's emulation (bit for bit where the PTX ISA defines the result, within the documented
error of the approximate instructions).
"""
import sys

import numpy as np
import torch
import triton
import triton.language as tl

N = 256
RNG = np.random.default_rng(0)
FLOATS = np.concatenate([RNG.standard_normal(N - 8) * 4, [0.0, -0.0, 1e-40, -1e-39, 30.0, -30.0, 126.5, -150.0]])
FLOATS = FLOATS.astype(np.float32)
WORDS = [RNG.integers(-2**31, 2**31, N).astype(np.int32) for _ in range(3)]

UNARY = ["tanh.approx.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "rcp.approx.f32", "rcp.approx.ftz.f32",
         "rcp.rn.f32"]
BINARY = ["cvt.rn.bf16x2.f32", "mul.hi.u32", "mul.hi.s32", "mul.lo.u32"]
LUTS = [0x96, 0xE8, 0x00, 0xFF, 0xF0, 0x1E]


@triton.jit
def unary(x_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise(ASM, "=f,f", [tl.load(x_ptr + offs)], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@triton.jit
def binary(a_ptr, b_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r", [a, b], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@triton.jit
def ternary(a_ptr, b_ptr, c_ptr, out_ptr, ASM: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b, c = tl.load(a_ptr + offs), tl.load(b_ptr + offs), tl.load(c_ptr + offs)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r,r", [a, b, c], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


def main(path):
    x = torch.from_numpy(FLOATS).cuda()
    a, b, c = (torch.from_numpy(w).cuda() for w in WORDS)
    bits_a = x.view(torch.int32)
    bits_b = torch.from_numpy(-FLOATS[::-1].copy()).cuda().view(torch.int32)
    results = {}
    for asm in UNARY:
        out = torch.full((N,), float("nan"), device="cuda")
        unary[(1,)](x, out, ASM=f"{asm} $0, $1;", N=N)
        results[asm] = out.cpu().numpy()
    for asm in BINARY:
        out = torch.zeros(N, dtype=torch.int32, device="cuda")
        first, second = (bits_a, bits_b) if asm.startswith("cvt") else (a, b)
        binary[(1,)](first, second, out, ASM=f"{asm} $0, $1, $2;", N=N)
        results[asm] = out.cpu().numpy()
    out = torch.zeros(N, dtype=torch.int32, device="cuda")
    ternary[(1,)](a, b, c, out, ASM="prmt.b32 $0, $1, $2, $3;", N=N)
    results["prmt.b32"] = out.cpu().numpy()
    for lut in LUTS:
        ternary[(1,)](a, b, c, out, ASM=f"lop3.b32 $0, $1, $2, $3, {lut:#x};", N=N)
        results[f"lop3.b32 {lut:#x}"] = out.cpu().numpy()
    torch.cuda.synchronize()
    results["device"] = np.array(torch.cuda.get_device_name())
    np.savez(path, **results)
    print("saved", sorted(results), "from", torch.cuda.get_device_name())


if __name__ == "__main__":
    main(sys.argv[1])
