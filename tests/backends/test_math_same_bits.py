"""The interpreter and the CPU backend give the same bits for every math function.

Both evaluate ``tl.exp`` ... ``tl.math.erf`` and ``tl.extra.libdevice``'s functions with the CPU
backend's code (the interpreter through compiled loops: backends/interpreter/math_functions.py), so
the results must agree bit for bit, for the CPU backend's quick code and its optimized code alike (any NaN matching any NaN), on arguments from every binade,
subnormals, zeros, infinities and NaN included. How close that code is to the true functions is
tested elsewhere (execution/test_elementwise.py, execution/test_libdevice.py, backends/llvm/test_llvm_math.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends import registry
from tritium.language.extra import libdevice

pytestmark = [pytest.mark.skipif(not registry.get("cpu").is_available(), reason="the CPU backend needs llvmlite"),
              pytest.mark.usefixtures("fresh_cpu_optimizer_queue")]

N = 4096


@triton.jit
def _core_kernel(x_ptr, o_ptr, N: tl.constexpr, FN: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.math.rsqrt(x)
    elif FN == "erf":
        y = tl.math.erf(x)
    elif FN == "floor":
        y = tl.floor(x)
    else:
        y = tl.ceil(x)
    tl.store(o_ptr + r, y)


@triton.jit
def _unary_kernel(x_ptr, o_ptr, N: tl.constexpr, FN: tl.constexpr):
    """One libdevice function, chosen by name."""
    r = tl.arange(0, N)
    tl.store(o_ptr + r, getattr(libdevice, FN)(tl.load(x_ptr + r)))


@triton.jit
def _binary_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr, FN: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, getattr(libdevice, FN)(tl.load(x_ptr + r), tl.load(y_ptr + r)))


CORE = ["exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor", "ceil"]
LIBDEVICE_UNARY = ["exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "erf", "erfc", "erfinv",
                   "tanh", "sinh", "cosh", "asinh", "acosh", "atanh", "sin", "cos", "tan", "asin", "acos", "atan",
                   "cbrt", "rsqrt", "sqrt", "lgamma", "tgamma", "logb", "rcp_rn"]
LIBDEVICE_BINARY = ["pow", "atan2", "hypot", "fmod", "remainder", "fmin", "fmax", "fdim", "nextafter", "div_rn",
                    "div_rz"]
FP32_ONLY = ["fast_expf", "fast_logf", "saturatef"]


def arguments(dtype, seed: int) -> np.ndarray:
    """Random bit patterns (every binade, subnormals, NaNs and infinities among them), values of
    ordinary size, and the special values."""
    rng = np.random.default_rng(seed)
    uint = np.uint32 if dtype == np.float32 else np.uint64
    patterns = rng.integers(0, np.iinfo(uint).max, N // 2, dtype=uint, endpoint=True).view(dtype)
    ordinary = (rng.standard_normal(N // 2 - 16) * 10.0 ** rng.integers(-3, 3, N // 2 - 16)).astype(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 100.0, -100.0, 1e-40,
                        -1e-40, np.finfo(dtype).tiny, np.finfo(dtype).max, -np.finfo(dtype).max], dtype)
    return np.concatenate([patterns, ordinary, special])


def _run(monkeypatch, backend: str, kernel, arrays, fn: str) -> np.ndarray:
    monkeypatch.setenv("TRITIUM_BACKEND", backend)
    out = np.zeros_like(arrays[0])
    kernel[(1,)](*arrays, out, N=N, FN=fn)
    return out


def assert_same_bits(monkeypatch, kernel, arrays, fn: str) -> None:
    """The interpreter's result against the CPU backend's first launch (its quick code) and a launch
    once the optimized code has replaced it."""
    interpreted = _run(monkeypatch, "interpreter", kernel, arrays, fn)
    quick = _run(monkeypatch, "cpu", kernel, arrays, fn)
    assert registry.get("cpu").wait_for_optimized_code(timeout=120)
    optimized = _run(monkeypatch, "cpu", kernel, arrays, fn)
    uint = np.uint32 if interpreted.dtype == np.float32 else np.uint64
    for tier, compiled in (("quick", quick), ("optimized", optimized)):
        same = (interpreted.view(uint) == compiled.view(uint)) | (np.isnan(interpreted) & np.isnan(compiled))
        if not same.all():
            bad = np.flatnonzero(~same)[:6]
            args = [a[bad].tolist() for a in arrays]
            raise AssertionError(f"{fn}: {int((~same).sum())} of {N} differ; at {args}: interpreter "
                                 f"{interpreted[bad].tolist()}, cpu ({tier} code) {compiled[bad].tolist()}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", CORE)
def test_core_math_functions(fn, dtype, monkeypatch):
    assert_same_bits(monkeypatch, _core_kernel, [arguments(dtype, 1)], fn)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", LIBDEVICE_UNARY + FP32_ONLY)
def test_libdevice_unary(fn, dtype, monkeypatch):
    if fn in FP32_ONLY and dtype == np.float64:
        pytest.skip("an fp32 function")
    assert_same_bits(monkeypatch, _unary_kernel, [arguments(dtype, 2)], fn)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", LIBDEVICE_BINARY)
def test_libdevice_binary(fn, dtype, monkeypatch):
    x, y = arguments(dtype, 3), arguments(dtype, 4)
    np.random.default_rng(5).shuffle(y)
    assert_same_bits(monkeypatch, _binary_kernel, [x, y], fn)


def test_the_interpreter_uses_the_compiled_loops(monkeypatch):
    """Without the compiled loops (the numpy fallback, fp64 rounded once) fp32 exp differs from the
    CPU backend's polynomial somewhere in these arguments: the comparison above can fail."""
    from tritium.backends.interpreter import math_functions

    x = arguments(np.float32, 1)
    compiled = _run(monkeypatch, "cpu", _core_kernel, [x], "exp")
    monkeypatch.setattr(math_functions, "evaluate", lambda op, args: None)
    fallback = _run(monkeypatch, "interpreter", _core_kernel, [x], "exp")
    finite = np.isfinite(compiled)
    assert (fallback[finite].view(np.uint32) != compiled[finite].view(np.uint32)).any()
