"""Accuracy the CUDA backend promises where it differs from the interpreter's, for tests that run on
every backend (on a machine with a GPU, the CUDA backend among them).

The CUDA backend computes math with Triton's instructions and NVIDIA's libdevice
(docs/cuda-backend.md), so its bounds are those documented for them: the PTX ISA's for the
approximate instructions (ex2.approx, sqrt.approx, rsqrt.approx, div.full: within 2 ulp), and the
CUDA C++ Programming Guide's tables of maximum ulp errors for libdevice's functions. The
interpreter (and the CPU backend) give the correctly rounded result or one ulp from it.
"""
from __future__ import annotations

import os

import numpy as np


def on_cuda() -> bool:
    return os.environ.get("TRITIUM_BACKEND") == "cuda"


# tl.* math on fp32: the instruction Triton uses and its bound (exp's multiply by log2(e) rounds the
# argument once, which costs |x| ulp more: see exp_ulps)
FP32_MATH_ULPS = {"exp2": 2, "log": 1, "log2": 1, "sqrt": 1, "sqrt_rn": 0, "rsqrt": 2, "sin": 2, "cos": 2,
                  "erf": 2}
FP64_MATH_ULPS = {"exp": 1, "exp2": 1, "log": 1, "log2": 1, "sqrt": 0, "rsqrt": 1, "sin": 2, "cos": 2, "erf": 2}

# libdevice functions (CUDA C++ Programming Guide, "Mathematical Functions": maximum ulp error)
LIBDEVICE_FP32_ULPS = {"exp": 2, "exp2": 2, "exp10": 2, "expm1": 1, "log": 1, "log2": 1, "log10": 2, "log1p": 1,
                       "sin": 2, "cos": 2, "tan": 4, "asin": 2, "acos": 2, "atan": 2, "sinh": 3, "cosh": 2,
                       "tanh": 2, "asinh": 3, "acosh": 4, "atanh": 3, "erf": 2, "erfc": 4, "erfinv": 2,
                       "lgamma": 6, "tgamma": 5, "cbrt": 1, "rcbrt": 1, "rsqrt": 2, "sqrt": 1, "pow": 9,
                       "fast_expf": 96, "fast_logf": 3}
LIBDEVICE_FP64_ULPS = {"exp": 1, "exp2": 1, "exp10": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1,
                       "sin": 2, "cos": 2, "tan": 2, "asin": 2, "acos": 2, "atan": 2, "sinh": 2, "cosh": 1,
                       "tanh": 1, "asinh": 3, "acosh": 3, "atanh": 2, "erf": 2, "erfc": 5, "erfinv": 5,
                       "lgamma": 4, "tgamma": 10, "cbrt": 1, "rcbrt": 1, "rsqrt": 1, "sqrt": 0, "pow": 2}


# pow with an int32 exponent is libdevice's powi: repeated squaring, one rounding per step, so its
# error grows with the exponent (the suite's exponents are below 64 in magnitude)
POWI_ULPS = 64


def exp_ulps(x: np.ndarray) -> np.ndarray:
    """tl.exp on fp32 is ex2.approx.f32(x * log2(e)): 2 ulp, plus the argument's rounding, which
    moves the result by up to |x| * log2(e) * ln(2) = |x| ulp."""
    return 2 + np.ceil(np.abs(x.astype(np.float64)))
