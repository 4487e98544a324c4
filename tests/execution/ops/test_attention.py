"""tritium.ops.scaled_dot_product_attention against torch's, causal and not, forward and backward."""
from __future__ import annotations

import pytest
import torch

import tritium.ops
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional
sdpa = tritium.ops.scaled_dot_product_attention


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_attention_matches_torch(causal, dtype):
    torch.manual_seed(9)
    # Lq != Lk, neither a multiple of the 64-row tiles; head dim 24 padded to a block of 32
    q = torch.randn(2, 3, 37, 24).to(dtype)
    k = torch.randn(2, 3, 70, 24).to(dtype)
    v = torch.randn(2, 3, 70, 24).to(dtype)
    check_against_torch(lambda q, k, v: sdpa(q, k, v, is_causal=causal),
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), [q, k, v])


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradcheck_fp64(causal):
    q, k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 7, 4), torch.randn(1, 2, 7, 3)
    gradcheck(lambda q, k, v: sdpa(q, k, v, is_causal=causal), q, k, v)


def test_attention_scale_value_dim_and_layouts():
    q = torch.randn(4, 40, 16).transpose(0, 1)  # (40, 4, 16) viewed from a transposed tensor
    k = torch.randn(40, 90, 16)
    v = torch.randn(40, 90, 8)  # Dv != D
    check_against_torch(lambda q, k, v: sdpa(q, k, v, scale=0.3),
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
                        [q.reshape(40, 4, 16), k, v])


def test_attention_long_causal_sequence_skips_masked_chunks():
    # 150 queries in tiles of 64: later tiles see more key chunks, the first one only its own
    q, k, v = torch.randn(1, 150, 32), torch.randn(1, 150, 32), torch.randn(1, 150, 32)
    check_against_torch(lambda q, k, v: sdpa(q, k, v, is_causal=True),
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v])


def test_attention_rejects_bad_shapes():
    with pytest.raises(ValueError, match="incompatible shapes"):
        sdpa(torch.randn(2, 5, 8), torch.randn(2, 6, 4), torch.randn(2, 6, 4))
    with pytest.raises(ValueError, match="no keys"):
        sdpa(torch.randn(2, 5, 8), torch.randn(2, 0, 8), torch.randn(2, 0, 8))
