"""Liger-Kernel's Triton kernels run unchanged on tritium, forward and backward, against fp64 torch.

`tritium run benchmarks/gpu/liger_kernels.py` with Liger-Kernel importable (`pip install
liger-kernel==0.8.5`, or its wheel unpacked on PYTHONPATH): on CUDA tensors when there is a GPU (the
CUDA backend), else on CPU tensors. Each op's output and input gradients are compared with the same
op computed by torch in fp64 from the same fp32 inputs, within `atol + rtol * max|reference|`
(fp32 arithmetic over rows of a few thousand elements: 1e-4 relative); prints one line per op and
exits non-zero if any misses.
"""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RTOL, ATOL = 1e-4, 1e-5


def _close(name, ours, reference) -> bool:
    ours, reference = ours.double(), reference.double()
    bound = ATOL + RTOL * reference.abs().max().item()
    error = (ours - reference).abs().max().item()
    print(f"  {name:10} max error {error:.2e} (allowed {bound:.2e}) {'ok' if error <= bound else 'FAIL'}")
    return error <= bound


def check(name, liger, reference, inputs) -> bool:
    """Runs ``liger(*inputs)`` and ``reference`` (on fp64 copies), compares outputs and the gradients
    of every input that requires them, for one random upstream gradient."""
    print(name)
    ours_in = [x.detach().clone().requires_grad_(x.requires_grad) if torch.is_tensor(x) else x for x in inputs]
    ref_in = [x.detach().double().requires_grad_(x.requires_grad) if torch.is_tensor(x) and x.is_floating_point()
              else x for x in inputs]
    out = liger(*ours_in)
    expected = reference(*ref_in)
    ok = _close("output", out, expected)
    grad = torch.randn_like(out)
    expected.backward(grad.double())  # first: some of Liger's backward kernels write into the gradient given
    out.backward(grad)
    for i, (a, r) in enumerate(zip(ours_in, ref_in)):
        if torch.is_tensor(a) and a.requires_grad:
            ok &= _close(f"grad {i}", a.grad, r.grad)
    return ok


def main() -> int:
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.rope import LigerRopeFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    torch.manual_seed(0)
    d = {"device": DEVICE}
    rows, cols = 64, 4096
    x = torch.randn(rows, cols, **d, requires_grad=True)
    w = torch.randn(cols, **d, requires_grad=True)
    bias = torch.randn(cols, **d, requires_grad=True)
    a, b = torch.randn(rows, 2048, **d, requires_grad=True), torch.randn(rows, 2048, **d, requires_grad=True)
    logits = torch.randn(128, 32000, **d, requires_grad=True)
    target = torch.randint(0, 32000, (128,), **d)
    log_p = torch.randn(32, 4096, **d).log_softmax(-1).requires_grad_(True)
    q_probs = torch.randn(32, 4096, **d).softmax(-1)
    images = torch.randn(8, 32, 256, **d, requires_grad=True)
    gw, gb = torch.randn(32, **d, requires_grad=True), torch.randn(32, **d, requires_grad=True)
    q, k = torch.randn(2, 8, 128, 64, **d, requires_grad=True), torch.randn(2, 8, 128, 64, **d)
    angles = torch.randn(1, 128, 32, **d)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rotate_half(t):
        first, second = t.chunk(2, -1)
        return torch.cat([-second, first], -1)

    def rope_reference(q_, k_, cos_, sin_):
        c, s = cos_.unsqueeze(1), sin_.unsqueeze(1)
        return q_ * c + rotate_half(q_) * s

    results = [
        check("rms_norm", lambda x_, w_: LigerRMSNormFunction.apply(x_, w_, 1e-6),
              lambda x_, w_: x_ * torch.rsqrt(x_.pow(2).mean(-1, keepdim=True) + 1e-6) * w_, [x, w]),
        check("layer_norm", lambda x_, w_, b_: LigerLayerNormFunction.apply(x_, w_, b_, 1e-6),
              lambda x_, w_, b_: F.layer_norm(x_, (cols,), w_, b_, 1e-6), [x, w, bias]),
        check("swiglu", LigerSiLUMulFunction.apply, lambda a_, b_: F.silu(a_) * b_, [a, b]),
        check("geglu", LigerGELUMulFunction.apply, lambda a_, b_: F.gelu(a_, approximate="tanh") * b_, [a, b]),
        check("cross_entropy", lambda l_, t_: LigerCrossEntropyFunction.apply(l_, t_, None)[0],
              lambda l_, t_: F.cross_entropy(l_, t_), [logits, target]),
        check("softmax", LigerSoftmaxFunction.apply, lambda x_: torch.softmax(x_, -1), [x]),
        check("kl_div", lambda p_, q_: LigerKLDivLossFunction.apply(p_, q_, "batchmean"),
              lambda p_, q_: F.kl_div(p_, q_, reduction="batchmean"), [log_p, q_probs]),
        check("group_norm", lambda x_, w_, b_: LigerGroupNormFunction.apply(x_, w_, b_, 32, 4, 1e-6),
              lambda x_, w_, b_: F.group_norm(x_, 4, w_, b_, 1e-6), [images, gw, gb]),
        check("rope", lambda q_, k_, c_, s_: LigerRopeFunction.apply(q_, k_, c_, s_)[0], rope_reference,
              [q, k, cos, sin]),
    ]
    import triton

    print(f"{sum(results)} of {len(results)} ops within tolerance on {DEVICE} "
          f"(triton is {triton.__name__} {getattr(triton, '__tritium_version__', triton.__version__)})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
