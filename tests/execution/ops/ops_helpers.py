"""Checking an op of tritium.ops against torch: forward values and gradients, with a non-uniform
grad_output (chapter 16's chain-rule trap: with grad_output all ones, a backward that forgets to
multiply by it still passes).

The oracle is torch's own function, run in fp64 on the same input values (for fp16/bf16 inputs:
the values already rounded to that type), so the tolerance measures only the kernel's error:
fp32 kernels compute in fp32; fp16/bf16 kernels compute in fp32 and round each stored value once
to their type (relative step 2**-11 and 2**-8).
"""
from __future__ import annotations

import torch

# (atol, rtol) per dtype. fp16 and bf16: about four units in the last place (2**-11 and 2**-8
# relative), for a value rounded once on store after fp32 arithmetic on rounded inputs. Ops whose
# results sum many rounded terms scale these (``scale``), and say why.
TOLERANCE = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}


def tolerance(dtype: torch.dtype, scale: float = 1.0) -> dict:
    atol, rtol = TOLERANCE[dtype]
    return {"atol": atol * scale, "rtol": rtol * scale}


def non_uniform_grad(output: torch.Tensor, seed: int = 1234) -> torch.Tensor:
    """A grad_output with different values everywhere (never all ones, never constant)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(output.shape, generator=generator, dtype=torch.float32).to(output.dtype)


def check_against_torch(op, reference, inputs: list, scale: float = 1.0, grad_scale=None, output_index=None):
    """Runs ``op(*inputs)`` and ``reference(*inputs in fp64)``, backpropagates the same non-uniform
    grad_output through both, and compares outputs and every input's gradient."""
    inputs = [x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x
              for x in inputs]
    out = op(*inputs)
    grad = non_uniform_grad(out)
    out.backward(grad)
    ref_inputs = [x.detach().double().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point()
                  else x for x in inputs]
    ref_out = reference(*ref_inputs)
    ref_out.backward(grad.double())
    dtype = out.dtype
    assert out.dtype == inputs[0].dtype and out.shape == ref_out.shape
    torch.testing.assert_close(out.double(), ref_out.detach(), **tolerance(dtype, scale), msg=lambda m: "forward: " + m)
    for i, (x, r) in enumerate(zip(inputs, ref_inputs)):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            assert x.grad is not None and x.grad.dtype == x.dtype and x.grad.shape == x.shape
            torch.testing.assert_close(x.grad.double(), r.grad, **tolerance(dtype, grad_scale or scale),
                                       msg=lambda m, i=i: f"gradient of input {i}: " + m)
    return out


def gradcheck(fn, *inputs, **kwargs) -> None:
    """torch.autograd.gradcheck in fp64: the analytic backward against finite differences."""
    inputs = tuple(x.detach().double().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point()
                   else x for x in inputs)
    assert torch.autograd.gradcheck(fn, inputs, **kwargs)
