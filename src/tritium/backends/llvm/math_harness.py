"""Test and benchmark harness for ``math``: each function compiled into a vectorized loop, numpy
references, and the ulp distance.

``compile_math(name, bits)`` JIT-compiles ``void f(T* x, [T* y,] T* out, i64 n)``, whose loop calls
``math.emit`` once per element, with the CPU backend's host JIT (``host``: this CPU, LLVM's O3
pipeline with loop and SLP vectorization, MCJIT), and returns a ``MathKernel`` that runs it on
numpy arrays. ``reference(name, *args)`` computes the function in fp64 with numpy (or, where numpy
has no such function, with libm through the fp64 kernel); ``ulp_distance(result, reference)``
measures an fp32 result against it.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Optional

import llvmlite.ir as ir
import numpy as np

from . import host
from . import math as lmath


def hardware_ldexp_available() -> bool:
    """True on hosts where the CPU backend builds its loops for 512-bit vectors and scales with a
    vector ldexp instruction (AVX-512): the harness builds its loops the same way."""
    return host.wide_vectors()


def build_module(name: str, bits: int = 32, function: str = "f", hardware_ldexp: Optional[bool] = None) -> ir.Module:
    """The IR module of ``void f(T* noalias x, [T* noalias y,] T* noalias out, i64 n)`` computing
    out[i] = name(x[i][, y[i]]) for i < n. ``hardware_ldexp``: scale with ``llvm.ldexp`` (default:
    where the CPU backend does)."""
    ty = lmath.F32 if bits == 32 else lmath.F64
    arity = lmath._ARITY[name]
    module = ir.Module(name=f"math_{name}_f{bits}")
    if hardware_ldexp_available() if hardware_ldexp is None else hardware_ldexp:
        lmath.use_hardware_ldexp(module)
    ptr = ir.PointerType()
    fnty = ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [lmath.I64])
    fn = ir.Function(module, fnty, function)
    for arg in fn.args[:-1]:
        arg.add_attribute("noalias")
    *inputs, out, n = fn.args
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(lmath.I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(lmath.I64, "i")
    i.add_incoming(ir.Constant(lmath.I64, 0), entry)
    values = [b.load(b.gep(p, [i], inbounds=True, source_etype=ty), typ=ty) for p in inputs]
    b.store(lmath.emit(b, name, values), b.gep(out, [i], inbounds=True, source_etype=ty))
    nxt = b.add(i, ir.Constant(lmath.I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return module


def optimize(module: ir.Module):
    """Parsed, verified and optimized (O3, loop and SLP vectorization; 512-bit vectors where the CPU
    backend asks for them) module, as the CPU backend optimizes a kernel."""
    return host.optimize(str(module))


class MathKernel:
    """One compiled ``name`` loop: call it with numpy arrays (converted to its float type)."""

    def __init__(self, name: str, bits: int = 32, hardware_ldexp: Optional[bool] = None):
        self.name, self.bits = name, bits
        self.arity = lmath._ARITY[name]
        self.dtype = np.dtype(np.float32 if bits == 32 else np.float64)
        mod = optimize(build_module(name, bits, hardware_ldexp=hardware_ldexp))
        self.ir = str(mod)
        self.asm = host.emit_assembly(mod)
        self._loaded = host.LoadedObject(host.emit_object(mod))  # keeps the code alive
        address = self._loaded.address("f")
        sig = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (self.arity + 1)), ctypes.c_int64)
        self._fn = sig(address)

    def __call__(self, *arrays, out=None):
        if len(arrays) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} arrays")
        arrays = np.broadcast_arrays(*[np.asarray(a, dtype=self.dtype) for a in arrays])
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if out is None:
            out = np.empty(arrays[0].shape, self.dtype)
        elif out.dtype != self.dtype or out.size != arrays[0].size or not out.flags.c_contiguous:
            raise ValueError(f"out must be a contiguous {self.dtype} array of {arrays[0].size} elements")
        self._fn(*[a.ctypes.data for a in arrays], out.ctypes.data, arrays[0].size)
        return out


@functools.lru_cache(maxsize=None)
def compile_math(name: str, bits: int = 32, hardware_ldexp: Optional[bool] = None) -> MathKernel:
    """The kernel of ``name`` at ``bits`` (32 or 64), compiled once per process and kept (its JIT
    engine lives as long as the process)."""
    return MathKernel(name, bits, hardware_ldexp)


# ------------------------------------------------------------------------------------------------
# References (fp64)
# ------------------------------------------------------------------------------------------------
def _round_half_away(x):
    """C's round (numpy's np.round rounds halfway cases to even)."""
    t = np.trunc(x)
    frac = np.where(np.isfinite(x), x - t, 0.0)
    return np.copysign(np.where(np.abs(frac) >= 0.5, t + np.sign(x), t), x)


def _fp64_kernel(name):
    """The fp64 kernel of ``name`` as a reference: libm's erf and erfc (much faster than Python's
    math.erf over millions of inputs), erfinv Newton-refined against them. The tests check these
    against Python's math module and mpmath."""
    return lambda x: compile_math(name, 64)(np.asarray(x, np.float64))


NUMPY_REFERENCE = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": _fp64_kernel("erf"), "erfc": _fp64_kernel("erfc"), "erfinv": _fp64_kernel("erfinv"),
    "sigmoid": lambda x: np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))),
                                  np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))),
    "pow": np.power, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": _round_half_away,
    "rint": np.rint, "fabs": np.abs, "fmod": np.fmod, "hypot": np.hypot,
}


def reference(name: str, *args):
    """``name`` of fp64 copies of ``args`` (numpy arrays), in fp64."""
    wide = [np.asarray(a, np.float64) for a in args]
    with np.errstate(all="ignore"):
        return NUMPY_REFERENCE[name](*wide)


# ------------------------------------------------------------------------------------------------
# ulp distance
# ------------------------------------------------------------------------------------------------
def _ordinal(x32):
    """fp32 values as integers in the order of the values (-0 and +0 both 0, inf next to max)."""
    i = np.asarray(x32, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


_TWO128 = 2.0 ** 128


def ulp_distance(result, ref64):
    """How many fp32 values lie between ``result`` (fp32) and the correctly rounded ``ref64``
    (an fp64 reference rounded to fp32): 0 is correctly rounded, 1 faithfully rounded.

    NaN must match NaN, and an infinite result or reference must match exactly (inf), except
    that inf and the largest finite fp32 count as 1 apart where the exact value lies within one
    ulp (2^104) of the overflow threshold 2^128."""
    result = np.asarray(result, np.float32)
    ref64 = np.asarray(ref64, np.float64)
    with np.errstate(all="ignore"):
        ref32 = ref64.astype(np.float32)
        dist = np.abs(_ordinal(result) - _ordinal(ref32)).astype(np.float64)
        nan_r, nan_e = np.isnan(result), np.isnan(ref64)
        dist = np.where(nan_r | nan_e, np.where(nan_r & nan_e, 0.0, np.inf), dist)
        inf_involved = (np.isinf(result) | np.isinf(ref32)) & ~(nan_r | nan_e) & (dist != 0)
        near = np.abs(np.abs(ref64) - _TWO128) <= 2.0 ** 104
        dist = np.where(inf_involved, np.where(near & (dist == 1), 1.0, np.inf), dist)
    return dist


def ulp_error(result, ref64):
    """The error of ``result`` in ulps of the exact value (fractional; 0.5 at most when correctly
    rounded), taking ulp(v) = 2^(exponent(v) - 23), 2^-149 for subnormal v; NaN/inf as in
    ``ulp_distance``."""
    result = np.asarray(result, np.float32)
    ref64 = np.asarray(ref64, np.float64)
    with np.errstate(all="ignore"):
        mag = np.abs(ref64)
        exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
        ulp = np.exp2(np.maximum(exponent, -126.0) - 23.0)
        err = np.abs(result.astype(np.float64) - ref64) / ulp
        special = ~np.isfinite(result) | ~np.isfinite(ref64) | (mag >= _TWO128)
        dist = ulp_distance(result, ref64)
        err = np.where(special, dist, err)
    return err
