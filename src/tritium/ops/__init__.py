"""``tritium.ops``: ready kernels, written in tritium's language, wired into ``torch.autograd``.

Each op is one module holding its kernels, a ``torch.autograd.Function`` whose forward and
backward launch them, and a plain function (below) that checks its arguments and applies it.
Inputs may have any shape (leading dimensions are flattened) and any strides (they are made
contiguous, except matmul's operands, whose strides the kernel takes); sizes need not be powers of
two (the kernels mask). fp16 and bf16 are computed in fp32 and rounded once on store; fp64 is
computed in fp64, so ``torch.autograd.gradcheck`` can check every backward. Needs torch.

=======================================  ======================================================
``gelu(x, approximate)``                 GELU, "none" (erf) or "tanh"
``bias_activation(x, bias, activation)`` ``activation(x + bias)``: relu, gelu, gelu_tanh, silu
``softmax(x)``, ``log_softmax(x)``       over the last dimension
``layer_norm(x, weight, bias, eps)``     over the last dimension; weight and bias gradients
``rms_norm(x, weight, eps)``             over the last dimension; weight gradient
``matmul(a, b, bias, activation)``       ``activation(a @ b + bias)``, autotuned tiles
``cross_entropy(logits, target, ...)``   online logsumexp over vocabulary chunks
``scaled_dot_product_attention(q, k, v, is_causal, scale)``   flash-attention style
=======================================  ======================================================
"""
from __future__ import annotations

from .attention import attention, scaled_dot_product_attention
from .bias_activation import bias_activation
from .cross_entropy import cross_entropy
from .gelu import gelu
from .layer_norm import layer_norm
from .matmul import matmul
from .rms_norm import rms_norm
from .softmax import log_softmax, softmax

__all__ = ["attention", "bias_activation", "cross_entropy", "gelu", "layer_norm", "log_softmax", "matmul",
           "rms_norm", "scaled_dot_product_attention", "softmax"]
