"""tl.dot_scaled against an fp64 oracle: the operands decoded (FP4 E2M1 codes by table, fp8 by
torch), multiplied by their E8M0 scales (2^(code - 127), one per 32 elements along K) and
multiplied in fp64. The scaled fp4 and fp8 values are exact in bf16 (an fp16 operand makes both
sides fp16: e5m2 scaled by 2^-4..2^4 is exact there too), so the only error is fp32 accumulation:
K = 64 products, within 64 * 2^-24 of the sum of |products|."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError
from tritium.tools.mxfp import MXFP4Tensor, MXScaleTensor

M = N = 32
K = 64


@triton.jit
def _scaled_dot(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                AR: tl.constexpr, AC: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr,
                FA: tl.constexpr, FB: tl.constexpr, A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr,
                SCALE_A: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, AR)[:, None] * AC + tl.arange(0, AC)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BR)[:, None] * BC + tl.arange(0, BC)[None, :])
    sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if SCALE_A:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    else:
        sa = None
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, lhs_k_pack=A_K_PACK, rhs_k_pack=B_K_PACK)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def _operand(fmt, rows, cols, k_dim, k_pack):
    """(the tensor the kernel loads, its fp64 values [rows, cols])."""
    if fmt == "e2m1":
        codes = MXFP4Tensor(size=(rows, cols)).random()
        pack_dim = k_dim if k_pack else 1 - k_dim
        return codes.to_packed_tensor(dim=pack_dim), codes.to(torch.float32).double()
    dtype = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "bf16": torch.bfloat16,
             "fp16": torch.float16}[fmt]
    x = (torch.randn(rows, cols) * 4).to(dtype)
    return (x.view(torch.uint8) if fmt not in ("bf16", "fp16") else x), x.double()


@pytest.mark.parametrize("fa, fb, a_k_pack, b_k_pack", [("e2m1", "e2m1", True, True), ("e2m1", "e2m1", False, False),
                                                       ("e4m3", "e5m2", True, True), ("bf16", "e2m1", True, True),
                                                       ("fp16", "e5m2", True, True)])
def test_dot_scaled_matches_the_decoded_product(backend, fa, fb, a_k_pack, b_k_pack):
    torch.manual_seed(0)
    a, a_values = _operand(fa, M, K, 1, a_k_pack)
    b, b_values = _operand(fb, K, N, 0, b_k_pack)
    sa = MXScaleTensor(size=(M, K // 32)).random(low=2.0 ** -4, high=2.0 ** 4)
    sb = MXScaleTensor(size=(N, K // 32)).random(low=2.0 ** -4, high=2.0 ** 4)
    scale_a = fa not in ("bf16", "fp16")
    if scale_a:
        a_values = a_values * sa.to(torch.float32).double().repeat_interleave(32, dim=1)
    b_values = b_values * sb.to(torch.float32).double().repeat_interleave(32, dim=1).T
    c = torch.full((M, N), float("nan"))
    _scaled_dot[(1,)](a, b, sa.data, sb.data, c, M=M, N=N, K=K, AR=a.shape[0], AC=a.shape[1], BR=b.shape[0],
                      BC=b.shape[1], FA=fa, FB=fb, A_K_PACK=a_k_pack, B_K_PACK=b_k_pack, SCALE_A=scale_a)
    exact = a_values @ b_values
    bound = K * 2.0 ** -24 * (a_values.abs() @ b_values.abs())
    assert torch.all((c.double() - exact).abs() <= bound)


def test_a_nan_scale_gives_nan(backend):
    a = MXFP4Tensor(size=(M, K)).random()
    b = MXFP4Tensor(size=(K, N)).random()
    sa = MXScaleTensor(size=(M, K // 32)).random(low=1.0, high=1.0)
    sb = MXScaleTensor(size=(N, K // 32)).random(low=1.0, high=1.0)
    sa.data[3, 1] = 255
    c = torch.zeros(M, N)
    packed_a, packed_b = a.to_packed_tensor(dim=1), b.to_packed_tensor(dim=0)
    _scaled_dot[(1,)](packed_a, packed_b, sa.data, sb.data, c, M=M, N=N, K=K, AR=M, AC=K // 2, BR=K // 2, BC=N,
                      FA="e2m1", FB="e2m1", A_K_PACK=True, B_K_PACK=True, SCALE_A=True)
    assert torch.isnan(c[3]).all() and not torch.isnan(c[:3]).any() and not torch.isnan(c[4:]).any()


def test_an_unknown_format_is_a_compile_error(backend):
    a = MXFP4Tensor(size=(M, K)).random().to_packed_tensor(dim=1)
    b = MXFP4Tensor(size=(K, N)).random().to_packed_tensor(dim=0)
    scales = MXScaleTensor(size=(M, K // 32)).random()
    with pytest.raises(CompilationError, match="lhs_format must be one of"):
        _scaled_dot[(1,)](a, b, scales.data, scales.data, torch.empty(M, N), M=M, N=N, K=K, AR=M, AC=K // 2,
                          BR=K // 2, BC=N, FA="e3m2", FB="e2m1", A_K_PACK=True, B_K_PACK=True, SCALE_A=True)


@triton.jit
def _batched_nvfp4(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                   K: tl.constexpr):
    bi = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + bi * (M * K // 2) + tl.arange(0, M)[None, :, None] * (K // 2) + tl.arange(0, K // 2)[None, None, :])
    b = tl.load(b_ptr + bi * (K // 2 * N) + tl.arange(0, K // 2)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    sa = tl.load(sa_ptr + bi * (M * K // 16) + tl.arange(0, M)[None, :, None] * (K // 16)
                 + tl.arange(0, K // 16)[None, None, :])
    sb = tl.load(sb_ptr + bi * (N * K // 16) + tl.arange(0, N)[None, :, None] * (K // 16)
                 + tl.arange(0, K // 16)[None, None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1")
    tl.store(c_ptr + bi * (M * N) + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], c)


def test_batched_operands_with_nvfp4_scales(backend):
    """3-D operands (a batch of 2 products) with NVFP4's scales: fp8 e4m3 values, one per 16
    elements along K."""
    torch.manual_seed(1)
    batch = 2
    a = MXFP4Tensor(size=(batch, M, K)).random()
    b = MXFP4Tensor(size=(batch, K, N)).random()
    sa = (torch.rand(batch, M, K // 16) * 4 + 0.25).to(torch.float8_e4m3fn)
    sb = (torch.rand(batch, N, K // 16) * 4 + 0.25).to(torch.float8_e4m3fn)
    a_values = a.to(torch.float32).double() * sa.double().repeat_interleave(16, dim=2)
    b_values = b.to(torch.float32).double() * sb.double().repeat_interleave(16, dim=2).transpose(1, 2)
    c = torch.full((batch, M, N), float("nan"))
    _batched_nvfp4[(1,)](a.to_packed_tensor(dim=2), b.to_packed_tensor(dim=1), sa, sb, c, B=batch, M=M, N=N, K=K)
    exact = a_values @ b_values
    bound = K * 2.0 ** -24 * (a_values.abs() @ b_values.abs()) + 1e-30
    # an fp4 value times an e4m3 scale has at most 2 + 4 significant bits: exact in bf16
    assert torch.all((c.double() - exact).abs() <= bound)
