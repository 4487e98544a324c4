"""tritium.ops.softmax and log_softmax over the last dimension, against torch."""
from __future__ import annotations

import pytest
import torch

import tritium.ops
from ops_helpers import check_against_torch, gradcheck

OPS = {
    "softmax": (tritium.ops.softmax, lambda t: torch.softmax(t, -1)),
    "log_softmax": (tritium.ops.log_softmax, lambda t: torch.log_softmax(t, -1)),
}


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_softmax_matches_torch(name, dtype):
    torch.manual_seed(2)
    op, reference = OPS[name]
    x = (torch.randn(4, 3, 173) * 4).to(dtype)  # 173 columns in a block of 256
    check_against_torch(op, reference, [x])


@pytest.mark.parametrize("name", list(OPS))
def test_softmax_gradcheck_fp64(name):
    gradcheck(OPS[name][0], torch.randn(3, 7))


@pytest.mark.parametrize("name", list(OPS))
def test_softmax_large_logits_do_not_overflow(name):
    op, reference = OPS[name]
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-5000.0, -5001.0, -5002.0]])
    torch.testing.assert_close(op(x), reference(x), atol=1e-6, rtol=1e-6)


def test_softmax_shapes_and_layouts():
    op, reference = OPS["softmax"]
    check_against_torch(op, reference, [torch.randn(40, 30).t()])  # transposed: rows of 40
    check_against_torch(op, reference, [torch.randn(5)])  # a single row
    check_against_torch(op, reference, [torch.randn(3, 1)])  # one column: all ones, zero gradient
    with pytest.raises(ValueError, match="non-empty last dimension"):
        op(torch.randn(3, 0))
