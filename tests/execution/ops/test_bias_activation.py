"""tritium.ops.bias_activation: act(x + bias) against torch, forward and backward (x and bias)."""
from __future__ import annotations

import pytest
import torch

import tritium.ops
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional
TORCH_ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
    "silu": F.silu,
    "none": lambda z: z,
}


@pytest.mark.parametrize("activation", list(TORCH_ACTIVATIONS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_bias_activation_matches_torch(activation, dtype):
    torch.manual_seed(1)
    x = (torch.randn(5, 9, 300) * 2).to(dtype)  # 45 rows of 300: tiles are masked in both directions
    bias = torch.randn(300).to(dtype)
    check_against_torch(lambda x, b: tritium.ops.bias_activation(x, b, activation),
                        lambda x, b: TORCH_ACTIVATIONS[activation](x + b), [x, bias])


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu"])
def test_bias_activation_gradcheck_fp64(activation):
    x = torch.randn(7, 5)
    x[x.abs() < 0.05] = 0.5  # keep relu's kink away from the finite differences
    gradcheck(lambda x, b: tritium.ops.bias_activation(x, b, activation), x, torch.randn(5))


def test_bias_activation_without_bias_and_with_many_rows():
    check_against_torch(lambda x: tritium.ops.bias_activation(x, None, "silu"), F.silu, [torch.randn(3, 7)])
    # more row tiles than backward programs: each program's loop visits several tiles
    check_against_torch(lambda x, b: tritium.ops.bias_activation(x, b, "gelu"), lambda x, b: F.gelu(x + b),
                        [torch.randn(3000, 17), torch.randn(17)])


def test_bias_activation_only_x_needs_grad():
    x = torch.randn(4, 6, requires_grad=True)
    bias = torch.randn(6)
    tritium.ops.bias_activation(x, bias, "relu").backward(torch.randn(4, 6))
    assert x.grad is not None and bias.grad is None


def test_bias_activation_rejects_bad_arguments():
    with pytest.raises(ValueError, match="activation must be one of"):
        tritium.ops.bias_activation(torch.randn(2, 3), torch.randn(3), "tanh")
    with pytest.raises(ValueError, match=r"bias must have shape \(3,\)"):
        tritium.ops.bias_activation(torch.randn(2, 3), torch.randn(2))
    with pytest.raises(TypeError, match="dtype"):
        tritium.ops.bias_activation(torch.randn(2, 3), torch.randn(3).double())
