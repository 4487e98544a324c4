"""Activation functions and their derivatives as @jit helpers, inlined into the ops' kernels.

``ACTIVATION`` is a constexpr string, so each kernel specialises to one activation and the others
cost nothing: "none", "relu", "gelu" (exact, with erf), "gelu_tanh" (the tanh approximation) or
"silu". Arguments are fp32 or fp64 blocks (the ops upcast fp16/bf16 before calling these).
"""
from __future__ import annotations

import tritium as triton
import tritium.language as tl

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")

# Constants of the GELU formulas: 1/sqrt(2), 1/sqrt(2*pi), sqrt(2/pi), and the tanh form's cubic term.
INV_SQRT_2 = tl.constexpr(0.7071067811865476)
INV_SQRT_2PI = tl.constexpr(0.3989422804014327)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
GELU_CUBIC = tl.constexpr(0.044715)


def check_activation(activation: str, op: str) -> str:
    if activation is None:
        return "none"
    if activation not in ACTIVATIONS:
        raise ValueError(f"tritium.ops.{op}: activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    return activation


@triton.jit
def tanh(u):
    """tanh through one exp of a non-positive argument, so it never overflows."""
    e = tl.exp(-2.0 * tl.abs(u))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(u < 0, -t, t)


@triton.jit
def gelu_exact(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * INV_SQRT_2))


@triton.jit
def gelu_exact_grad(x):
    # d/dx x * Phi(x) = Phi(x) + x * phi(x)
    cdf = 0.5 * (1.0 + tl.math.erf(x * INV_SQRT_2))
    pdf = INV_SQRT_2PI * tl.exp(-0.5 * x * x)
    return cdf + x * pdf


@triton.jit
def gelu_tanh(x):
    inner = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)
    return 0.5 * x * (1.0 + tanh(inner))


@triton.jit
def gelu_tanh_grad(x):
    # y = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + c x^3):
    # dy/dx = (1 + t)/2 + x/2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 c x^2)
    inner = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)
    t = tanh(inner)
    du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_CUBIC * x * x)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def apply(z, ACTIVATION: tl.constexpr):
    """``ACTIVATION(z)``."""
    if ACTIVATION == "relu":
        out = tl.where(z > 0, z, 0.0)
    elif ACTIVATION == "gelu":
        out = gelu_exact(z)
    elif ACTIVATION == "gelu_tanh":
        out = gelu_tanh(z)
    elif ACTIVATION == "silu":
        out = z * sigmoid(z)
    else:
        out = z
    return out


@triton.jit
def derivative(z, ACTIVATION: tl.constexpr):
    """``ACTIVATION'(z)``; relu's is 0 at 0, as torch's is."""
    if ACTIVATION == "relu":
        out = tl.where(z > 0, 1.0, 0.0).to(z.dtype)
    elif ACTIVATION == "gelu":
        out = gelu_exact_grad(z)
    elif ACTIVATION == "gelu_tanh":
        out = gelu_tanh_grad(z)
    elif ACTIVATION == "silu":
        s = sigmoid(z)
        out = s * (1.0 + z * (1.0 - s))
    else:
        out = tl.full(z.shape, 1.0, z.dtype)
    return out
