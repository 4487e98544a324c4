"""tritium.ops.rms_norm against torch.nn.functional.rms_norm: x and weight gradients."""
from __future__ import annotations

import pytest
import torch

import tritium.ops
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_rms_norm_matches_torch(dtype):
    torch.manual_seed(4)
    x = torch.randn(2, 75, 96).to(dtype)
    weight = torch.randn(96).to(dtype)
    check_against_torch(lambda x, w: tritium.ops.rms_norm(x, w, eps=1e-6),
                        lambda x, w: F.rms_norm(x, (96,), w, eps=1e-6), [x, weight])


def test_rms_norm_gradcheck_fp64():
    gradcheck(lambda x, w: tritium.ops.rms_norm(x, w), torch.randn(5, 6), torch.randn(6))
    gradcheck(lambda x: tritium.ops.rms_norm(x, eps=1e-2), torch.randn(3, 10))


def test_rms_norm_without_weight_any_layout():
    check_against_torch(tritium.ops.rms_norm, lambda t: F.rms_norm(t, (20,), eps=1e-6), [torch.randn(20, 30).t()])
    with pytest.raises(ValueError, match="non-empty last dimension"):
        tritium.ops.rms_norm(torch.randn(4, 0))
