"""Exhaustive accuracy and throughput of the native backend's fp32 math (backends/llvm/math.py).

    .venv/bin/python benchmarks/math_ulp.py                       # every fp32 input, every function
    .venv/bin/python benchmarks/math_ulp.py --functions exp,log   # some of them
    .venv/bin/python benchmarks/math_ulp.py --quick               # every 257th input (--stride N)

Each one-argument function is compiled into a vectorized loop (math_harness: MCJIT for this CPU,
O3 with loop vectorization) and run over all 2^32 fp32 bit patterns in chunks of 2^24 (or over a
stride of them), against the fp64 reference rounded to fp32 (numpy; libm for erf, erfc, erfinv's
Newton-refined fp64 kernel). Per function it prints:

- the maximum ulp distance to the correctly rounded result (0 = correctly rounded, 1 = faithful;
  NaN and infinities must match) and one input where it is reached;
- where a function's bound holds only on a part of the domain (sin, cos, tan), the maximum there;
- the largest error in ulps of the exact value (fractional, 0.5 for a correctly rounded result);
- the throughput in Gelem/s over the same inputs (subnormal operands and results are slow on
  x86, for both), and on a cache-resident block of typical arguments repeated, each beside
  numpy's fp32 function's (numpy's own SIMD loops) with the ratio ours / numpy's; "-" where numpy
  has no fp32 version.

The two-argument functions (pow, atan2, fmod, hypot) are sampled instead: --pairs random pairs of
bit patterns plus as many typical pairs. Exhaustive runs take long on a small machine (minutes per
function): use --quick or --stride to check a bound first.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tritium.backends.llvm import math as lmath  # noqa: E402
from tritium.backends.llvm import math_harness as H  # noqa: E402

CHUNK = 1 << 24

# numpy's fp32 counterpart of each function (None: numpy has none)
NUMPY_F32 = {
    "exp": np.exp, "exp2": np.exp2, "exp10": None, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": None, "erfc": None, "erfinv": None, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": None, "rint": np.rint, "fabs": np.abs,
    "pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "hypot": np.hypot,
}
# functions whose bound is stated on |x| <= limit only (see math.py's table)
PARTIAL = {"sin": 2.0 ** 19, "cos": 2.0 ** 19, "tan": 2.0 ** 44}
# the range of the in-cache throughput measurement (uniform samples; the second argument's range
# for two-argument functions after the semicolon)
TYPICAL = {
    "exp": (-10, 10), "exp2": (-10, 10), "exp10": (-5, 5), "expm1": (-2, 2), "log": (0.01, 100),
    "log2": (0.01, 100), "log10": (0.01, 100), "log1p": (-0.5, 10), "sin": (-30, 30), "cos": (-30, 30),
    "tan": (-30, 30), "asin": (-1, 1), "acos": (-1, 1), "atan": (-10, 10), "sinh": (-5, 5),
    "cosh": (-5, 5), "tanh": (-5, 5), "asinh": (-10, 10), "acosh": (1, 10), "atanh": (-1, 1),
    "erf": (-3, 3), "erfc": (-3, 3), "erfinv": (-1, 1), "sigmoid": (-10, 10), "sqrt": (0, 100),
    "rsqrt": (0.01, 100), "cbrt": (-100, 100), "floor": (-100, 100), "ceil": (-100, 100),
    "trunc": (-100, 100), "round": (-100, 100), "rint": (-100, 100), "fabs": (-100, 100),
    "pow": ((0, 10), (-10, 10)), "atan2": ((-10, 10), (-10, 10)), "fmod": ((-100, 100), (-10, 10)),
    "hypot": ((-10, 10), (-10, 10)),
}
BLOCK, REPS = 1 << 16, 200


def _patterns(start: int, stop: int, stride: int) -> np.ndarray:
    return np.arange(start, stop, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)


class Tally:
    """Running maxima of one function's errors, and its time and numpy's."""

    def __init__(self):
        self.n = 0
        self.worst = (-1.0, None)  # (ulp distance, inputs)
        self.worst_partial = (-1.0, None)
        self.worst_error = 0.0
        self.ours = 0.0
        self.numpy = 0.0

    def add(self, args, result, ref, partial_mask=None):
        dist = H.ulp_distance(result, ref)
        err = H.ulp_error(result, ref)
        self.n += result.size
        i = int(np.argmax(dist))
        if dist[i] > self.worst[0]:
            self.worst = (float(dist[i]), tuple(a[i] for a in args), result[i], ref[i])
        if partial_mask is not None and partial_mask.any():
            d = np.where(partial_mask, dist, -1.0)
            j = int(np.argmax(d))
            if d[j] > self.worst_partial[0]:
                self.worst_partial = (float(d[j]), tuple(a[j] for a in args), result[j], ref[j])
        finite = np.isfinite(err)
        if finite.any():
            self.worst_error = max(self.worst_error, float(err[finite].max()))

    def report(self, name: str) -> str:
        dist, args, got, ref = self.worst
        where = ", ".join(f"{a!r}" for a in (float(v) for v in args))
        line = (f"{name:8s} {self.n:>11d} inputs  max {dist:g} ulp at {name}({where}) = {float(got)!r} "
                f"(exact {float(ref)!r}); max error {self.worst_error:.3f} ulp of the exact value")
        if self.worst_partial[1] is not None:
            pd, pargs, pgot, pref = self.worst_partial
            line += (f"\n{'':8s} |x| <= {PARTIAL[name]:g}: max {pd:g} ulp at "
                     f"{name}({float(pargs[0])!r}) = {float(pgot)!r} (exact {float(pref)!r})")
        line += "\n" + " " * 9 + "over these inputs: " + _rates(self.n / self.ours / 1e9,
                                                              self.n / self.numpy / 1e9 if self.numpy else None)
        line += "\n" + " " * 9 + f"typical arguments {TYPICAL[name]} in cache: " + _rates(*typical_throughput(name))
        return line


def _rates(ours: float, theirs: float | None) -> str:
    if theirs is None:
        return f"{ours:.3f} Gelem/s, numpy fp32 -"
    return f"{ours:.3f} Gelem/s, numpy fp32 {theirs:.3f} Gelem/s, ratio {ours / theirs:.2f}"


def typical_throughput(name: str) -> tuple[float, float | None]:
    """(ours, numpy's) Gelem/s on a cache-resident block of typical arguments, repeated."""
    kernel = H.compile_math(name, 32)
    rng = np.random.default_rng(1)
    ranges = TYPICAL[name] if kernel.arity == 2 else (TYPICAL[name],)
    args = [rng.uniform(lo, hi, BLOCK).astype(np.float32) for lo, hi in ranges]
    out = np.empty(BLOCK, np.float32)
    rates = []
    numpy_fn = NUMPY_F32.get(name)
    fns = [lambda: kernel(*args, out=out)]
    if numpy_fn is not None:
        fns.append(lambda: numpy_fn(*args, out=out) if isinstance(numpy_fn, np.ufunc) else numpy_fn(*args))
    for fn in fns:
        fn()
        t = time.perf_counter()
        for _ in range(REPS):
            fn()
        rates.append(REPS * BLOCK / (time.perf_counter() - t) / 1e9)
    return rates[0], (rates[1] if len(rates) > 1 else None)


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def check_unary(name: str, stride: int) -> Tally:
    kernel = H.compile_math(name, 32)
    numpy_fn = NUMPY_F32.get(name)
    tally = Tally()
    out = np.empty(CHUNK, np.float32)
    for start in range(0, 1 << 32, CHUNK * stride):
        x = _patterns(start, min(start + CHUNK * stride, 1 << 32), stride)
        result, dt = _timed(lambda: kernel(x, out=out[: x.size]))
        tally.ours += dt
        if numpy_fn is not None:
            _, dt = _timed(numpy_fn, x)
            tally.numpy += dt
        partial = np.abs(x) <= PARTIAL[name] if name in PARTIAL else None
        tally.add((x,), result, H.reference(name, x), partial)
    return tally


def check_binary(name: str, pairs: int, seed: int = 0) -> Tally:
    kernel = H.compile_math(name, 32)
    numpy_fn = NUMPY_F32.get(name)
    rng = np.random.default_rng(seed)
    tally = Tally()
    for start in range(0, pairs, CHUNK):
        n = min(CHUNK, pairs - start)
        samples = [rng.integers(0, 1 << 32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32),
                   np.stack([rng.uniform(-10, 10, n), rng.uniform(-10, 10, n)]).astype(np.float32)]
        if name == "pow":  # typical bases, and negative bases with integer exponents
            samples[1][0] = np.abs(samples[1][0])
            samples.append(np.stack([rng.uniform(-10, 0, n), rng.integers(-40, 40, n)]).astype(np.float32))
        for a, b in samples:
            result, dt = _timed(kernel, a, b)
            tally.ours += dt
            if numpy_fn is not None:
                _, dt = _timed(numpy_fn, a, b)
                tally.numpy += dt
            tally.add((a, b), result, H.reference(name, a, b))
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--functions", default="", help="comma-separated names (default: all fp32 functions)")
    parser.add_argument("--quick", action="store_true", help="every 257th input (shorthand for --stride 257)")
    parser.add_argument("--stride", type=int, default=0, help="test every N-th bit pattern")
    parser.add_argument("--pairs", type=int, default=0,
                        help="random pairs per two-argument function (default 2^24, 2^20 with --quick)")
    args = parser.parse_args()
    stride = args.stride or (257 if args.quick else 1)
    pairs = args.pairs or (1 << 20 if args.quick else 1 << 24)
    names = [n for n in args.functions.split(",") if n] or sorted(n for n, w in lmath.FUNCTIONS.items() if 32 in w)
    unknown = [n for n in names if n not in lmath.FUNCTIONS]
    if unknown:
        parser.error(f"unknown functions: {', '.join(unknown)} (known: {', '.join(sorted(lmath.FUNCTIONS))})")
    warnings.simplefilter("ignore")  # numpy's invalid/overflow warnings on the special inputs
    print(f"fp32 math: {'every input' if stride == 1 else f'every {stride}th input'}, "
          f"{pairs} random + typical pairs for two-argument functions")
    for name in names:
        tally = check_binary(name, pairs) if lmath._ARITY[name] == 2 else check_unary(name, stride)
        print(tally.report(name), flush=True)


if __name__ == "__main__":
    main()
