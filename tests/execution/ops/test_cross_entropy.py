"""tritium.ops.cross_entropy: chunked online logsumexp over the vocabulary, against torch."""
from __future__ import annotations

import pytest
import torch

import tritium as triton
import tritium.ops
from ops_helpers import check_against_torch, gradcheck

F = torch.nn.functional


def _torch_cross_entropy(target, reduction, ignore_index=-100):
    def reference(logits):
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction=reduction,
                               ignore_index=ignore_index)
        return loss.reshape(target.shape) if reduction == "none" else loss

    return reference


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cross_entropy_matches_torch(reduction, dtype):
    torch.manual_seed(8)
    vocab = 5000  # three chunks of 2048 logits, the last one masked
    logits = (torch.randn(3, 7, vocab) * 4).to(dtype)
    target = torch.randint(0, vocab, (3, 7))
    target[0, 1] = -100  # ignored: no loss, no gradient, not counted in the mean
    check_against_torch(lambda x: tritium.ops.cross_entropy(x, target, reduction),
                        _torch_cross_entropy(target, reduction), [logits])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradcheck_fp64(reduction):
    target = torch.tensor([1, 36, -100, 0])
    gradcheck(lambda x: tritium.ops.cross_entropy(x, target, reduction), torch.randn(4, 37))


def test_cross_entropy_large_logits_and_custom_ignore_index():
    logits = torch.tensor([[1e4, 0.0, -1e4], [-3e4, -3e4 + 2, -3e4 + 1], [5.0, 6.0, 7.0]])
    target = torch.tensor([1, 0, 2])
    check_against_torch(lambda x: tritium.ops.cross_entropy(x, target, ignore_index=2),
                        _torch_cross_entropy(target, "mean", ignore_index=2), [logits])
    one = torch.randn(100)
    check_against_torch(lambda x: tritium.ops.cross_entropy(x, torch.tensor(3), "sum"),
                        lambda x: F.cross_entropy(x[None], torch.tensor([3]), reduction="sum"), [one])


def test_cross_entropy_int32_targets():
    logits = torch.randn(6, 11)
    target = torch.randint(0, 11, (6,), dtype=torch.int32)
    torch.testing.assert_close(tritium.ops.cross_entropy(logits, target), F.cross_entropy(logits, target.long()))


def test_cross_entropy_target_out_of_range_is_a_device_assertion():
    with pytest.raises(triton.DeviceAssertionError, match="target out of range"):
        tritium.ops.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2, 10, 3]))
    with pytest.raises(ValueError, match="target must have the shape"):
        tritium.ops.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="class indices"):
        tritium.ops.cross_entropy(torch.randn(4, 10), torch.rand(4, 10))
