"""The C math library's functions mapped over arrays, through loops compiled once with llvmlite.

numpy has no ``erf``; calling ``math.erf`` per element costs ~100 ns. A compiled loop calling the
same libm function costs ~20 ns and gives bit-identical results (CPython's ``math.erf`` is libm's).
fp32 arrays are widened, evaluated in fp64 and rounded once, inside the loop.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import threading

import numpy as np

from . import native_loops, vector_math

_VARIANTS = {  # suffix: (element type, widening line, narrowing line)
    "f64": ("double", "%wide = fadd double %x, 0.0", "%result = fadd double %y, 0.0"),
    "f32": ("float", "%wide = fpext float %x to double", "%result = fptrunc double %y to float"),
}

_lock = threading.Lock()
_compiled: dict = {}


def _compile(fn: str):
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    source = f"declare double @{fn}(double)\n" + "".join(
        native_loops.map_loop(f"map_{fn}_{suffix}", ty, ty, f"  {widen}\n  %y = call double @{fn}(double %wide)\n"
                              f"  {narrow}", "%result")
        for suffix, (ty, widen, narrow) in _VARIANTS.items())
    loops = native_loops.compile_maps(source, [f"map_{fn}_{suffix}" for suffix in _VARIANTS],
                                      {fn: ctypes.cast(getattr(libm, fn), ctypes.c_void_p).value})
    return None if loops is None else {suffix: loops[f"map_{fn}_{suffix}"] for suffix in _VARIANTS}


def _loops(fn: str):
    with _lock:
        if fn not in _compiled:
            _compiled[fn] = _compile(fn)  # None without a JIT: fall back to Python's math module
        return _compiled[fn]


def apply(fn: str, x: np.ndarray) -> np.ndarray:
    """``fn`` (a libm function of one double) elementwise; fp32 in -> fp32 out, rounded once."""
    suffix = "f32" if x.dtype == np.float32 else "f64"
    source = np.ascontiguousarray(x, dtype=np.float32 if suffix == "f32" else np.float64)
    loop = vector_math.fp32_loop(fn) if suffix == "f32" else None
    if loop is None:
        loops = _loops(fn)
        if loops is None:
            slow = np.frompyfunc(getattr(math, fn), 1, 1)
            return slow(source.astype(np.float64)).astype(source.dtype) if source.size else source.copy()
        loop = loops[suffix]
    out = np.empty_like(source)
    size = source.itemsize
    native_loops.over_two_threads(lambda start, stop: loop(source.ctypes.data + start * size,
                                                           out.ctypes.data + start * size, stop - start), source.size)
    return out
