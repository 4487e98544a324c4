"""tritium.ops.layer_norm against torch.nn.functional.layer_norm: x, weight and bias gradients."""
from __future__ import annotations

import pytest
import torch

import tritium.ops
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layer_norm_matches_torch(dtype):
    torch.manual_seed(3)
    x = (torch.randn(6, 21, 200) * 2 + 1).to(dtype)  # 126 rows: more rows than backward programs
    weight, bias = torch.randn(200).to(dtype), torch.randn(200).to(dtype)
    check_against_torch(lambda x, w, b: tritium.ops.layer_norm(x, w, b, eps=1e-5),
                        lambda x, w, b: F.layer_norm(x, (200,), w, b, eps=1e-5), [x, weight, bias])


def test_layer_norm_gradcheck_fp64():
    gradcheck(lambda x, w, b: tritium.ops.layer_norm(x, w, b), torch.randn(5, 6), torch.randn(6), torch.randn(6))


def test_layer_norm_without_weight_or_bias():
    x = torch.randn(9, 33)
    check_against_torch(tritium.ops.layer_norm, lambda t: F.layer_norm(t, (33,)), [x])
    check_against_torch(lambda x, w: tritium.ops.layer_norm(x, w), lambda x, w: F.layer_norm(x, (33,), w),
                        [x, torch.randn(33)])
    gradcheck(lambda x, b: tritium.ops.layer_norm(x, None, b, eps=1e-3), torch.randn(3, 4), torch.randn(4))


def test_layer_norm_layouts_and_large_mean():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(50, 70, generator=generator).t() + 1000.0  # transposed, and a mean far larger than the spread
    # x - mean is exact (Sterbenz), so the error is the fp32 mean's: a sum of 50 values near 1000 rounds at
    # up to 6 levels, each off by half an ulp of a partial sum (<= 2e-3), divided by 50: about 2.4e-4 worst case
    check_against_torch(lambda x: tritium.ops.layer_norm(x), lambda t: F.layer_norm(t, (50,)), [x], scale=25.0)


def test_layer_norm_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\)"):
        tritium.ops.layer_norm(torch.randn(3, 4), torch.randn(5))
    with pytest.raises(TypeError, match="dtype"):
        tritium.ops.layer_norm(torch.randn(3, 4), torch.randn(4).half())
