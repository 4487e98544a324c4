"""tritium.ops.matmul: activation(a @ b + bias) against torch, forward and backward, autotuned."""
from __future__ import annotations

import os

import pytest
import torch

import tritium.ops
from tritium.ops.matmul import MATMUL_CONFIGS, matmul_kernel
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional
TORCH_ACTIVATIONS = {"none": lambda z: z, "relu": F.relu, "gelu": F.gelu, "silu": F.silu}


@pytest.mark.parametrize("activation", list(TORCH_ACTIVATIONS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_matmul_matches_torch(activation, dtype):
    torch.manual_seed(5)
    a = torch.randn(3, 37, 45).to(dtype)  # M = 111, K = 45, N = 60: no size is a multiple of a tile
    b = torch.randn(45, 60).to(dtype)
    bias = torch.randn(60).to(dtype)
    # With an activation, grad_z = grad_out * act'(z) is stored in the input type (as an unfused
    # torch graph stores it) before the backward matmuls sum 60 or 111 of its terms: in fp16/bf16
    # that costs a few units in the last place more than one rounding.
    check_against_torch(lambda a, b, c: tritium.ops.matmul(a, b, c, activation),
                        lambda a, b, c: TORCH_ACTIVATIONS[activation](a @ b + c), [a, b, bias],
                        grad_scale=1.0 if activation == "none" else 4.0)


def test_matmul_gradcheck_fp64():
    a, b, bias = torch.randn(3, 5), torch.randn(5, 4), torch.randn(4)
    gradcheck(lambda a, b, c: tritium.ops.matmul(a, b, c, "silu"), a, b, bias)
    gradcheck(lambda a, b: tritium.ops.matmul(a, b, activation="gelu_tanh"), a, b)


def test_matmul_strided_operands_and_shapes():
    b_transposed = torch.randn(20, 33).t()  # (33, 20) with strides (1, 33): read in place
    check_against_torch(tritium.ops.matmul, lambda a, b: a @ b, [torch.randn(17, 33), b_transposed])
    check_against_torch(tritium.ops.matmul, lambda a, b: a @ b, [torch.randn(40, 17).t(), torch.randn(40, 8)])
    check_against_torch(tritium.ops.matmul, lambda a, b: a @ b, [torch.randn(33), torch.randn(33, 5)])  # 1-D a
    out = tritium.ops.matmul(torch.randn(4, 0), torch.randn(0, 3))  # K = 0: zeros
    assert torch.equal(out, torch.zeros(4, 3))


def test_matmul_tf32_rounds_inputs_as_a_gpu_does():
    torch.manual_seed(6)
    a, b = torch.randn(64, 256), torch.randn(256, 48)
    exact = a.double() @ b.double()
    ieee = tritium.ops.matmul(a, b)
    tf32 = tritium.ops.matmul(a, b, input_precision="tf32")
    ieee_error = (ieee.double() - exact).abs().max().item()
    tf32_error = (tf32.double() - exact).abs().max().item()
    # fp32 sums of 256 products in any order: within 256 * 2**-24 of sum |a||b| (the interpreter sums in
    # fp64 and is far inside it; a compiled backend sums in fp32)
    assert ieee_error < 256 * 2.0**-24 * (a.double().abs() @ b.double().abs()).max().item()
    # tf32 keeps 10 mantissa bits: each product is off by up to ~2**-10 relative; 256 of them add up
    assert 20 * ieee_error < tf32_error < 0.1


def test_matmul_autotunes_and_saves_the_winner():
    torch.manual_seed(7)
    a, b = torch.randn(70, 90), torch.randn(90, 50)
    matmul_kernel.cache.clear()  # a winner another backend's run left in memory would skip the tuning
    torch.testing.assert_close(tritium.ops.matmul(a, b), a @ b, atol=1e-4, rtol=1e-5)
    assert matmul_kernel.best_config in MATMUL_CONFIGS
    saved = os.listdir(os.path.join(os.environ["TRITIUM_CACHE_DIR"], "autotune"))
    assert any(name.startswith("matmul_kernel-") for name in saved)


def test_matmul_only_some_inputs_need_grad():
    a = torch.randn(6, 7, requires_grad=True)
    b = torch.randn(7, 5)
    bias = torch.randn(5, requires_grad=True)
    tritium.ops.matmul(a, b, bias, "relu").backward(torch.randn(6, 5))
    assert a.grad is not None and bias.grad is not None and b.grad is None


def test_matmul_rejects_bad_arguments():
    with pytest.raises(ValueError, match="cannot be multiplied"):
        tritium.ops.matmul(torch.randn(3, 4), torch.randn(5, 2))
    with pytest.raises(ValueError, match="b exactly two"):
        tritium.ops.matmul(torch.randn(3, 4), torch.randn(2, 4, 2))
    with pytest.raises(ValueError, match="input_precision"):
        tritium.ops.matmul(torch.randn(3, 4), torch.randn(4, 2), input_precision="bf16x3")
    with pytest.raises(TypeError, match="dtype"):
        tritium.ops.matmul(torch.randn(3, 4), torch.randn(4, 2).half())
