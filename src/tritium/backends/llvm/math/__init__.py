"""Elementwise math functions as LLVM IR, one scalar lane at a time (a package: ``core`` holds the
instruction helpers and the registry; ``exponential``, ``wide``, ``trig`` and ``special`` the function
families, each registering its functions when imported).

``emit(builder, name, args)`` computes ``name(*args)`` on scalar ``float`` (fp32) or ``double``
(fp64) values, all of one type, and returns a value of that type. ``FUNCTIONS`` maps each name it
knows to the float widths it supports.

fp32 functions are our own code: range reduction, a minimax polynomial evaluated with fma, and a
fix-up of the special values, written without branches or calls (``select`` picks between the
cases), so LLVM's loop vectorizer turns a loop that calls them into packed code at the machine's
native width. The only intrinsics used are the ones that are instructions on x86-64 (fma, fabs,
floor, ceil, trunc, roundeven, copysign, sqrt); the exponent is read and 2^k is built with
integer bit manipulation. Some fp32 functions compute internally in fp64 where fp32 alone would
need double-float arithmetic (pow, cbrt, erfc, the hyperbolics, their inverses): fp64 arithmetic
vectorizes as well, at half the width.

fp64 functions call the C library (``exp``, ``log``, ...: declared in the module, resolved from the
process at JIT time); the ones C99 lacks are built from libm calls and arithmetic: sigmoid, rsqrt,
erfinv (a first guess refined by Newton steps on libm's erf and erfc), exp10 (``pow(10, x)``).

Polynomial coefficients are weighted minimax fits (a Remez exchange run in mpmath at 40 digits,
the weight chosen so that the error minimized is the relative error of the final result), rounded
to fp32 (for erf and erfinv one at a time, lowest power first, refitting the others). No lookup
tables.

Accuracy of the fp32 functions
------------------------------
The maximum distance in ulp to the correctly rounded result (the fp64 reference rounded to fp32;
the distance counts the fp32 values between the two, so powers of two and subnormals need no
special care; NaN and infinities must match exactly), measured with ``benchmarks/math_ulp.py``'s
harness on every 61st fp32 bit pattern (70 million inputs per function, all binades, subnormals
included); on every 7th for exp, exp2, log, log2, sigmoid, tanh, erf, expm1, log1p and rsqrt
(613 million), every 3rd below 2^19 for sin and cos, every 5th of [0, 1] for erfinv, every 7th
below 2^44 for tan; on 2^24 random pairs plus 2^24 typical ones for the two-argument functions.
``tests/backends/llvm/test_llvm_math.py`` asserts these bounds on 200k samples per function. "measured
0" means correctly rounded on every input checked; the bound claimed is still 1.

==============  ===  ==========================================================================
function        ulp  domain where the bound holds; notes
==============  ===  ==========================================================================
exp             1    all; inf above 88.72283, subnormal results rounded once, 0 below -103.97
exp2            1    all; exact at integers
exp10           1    all
expm1           1    all
log             1    all (subnormal x is scaled by 2^23 first)
log2            1    all; exact at powers of two
log10           1    all
log1p           1    all
sigmoid         2    all; three roundings (e^-|x|, 1 + e, the quotient)
tanh            1    all; +-1 from |x| = 9.01
erf             1    all
erfc            1    all (fp64 internally)
erfinv          1    [-1, 1]; +-inf at +-1, NaN outside
sin, cos        1    |x| < 2^19; 2 ulp below 2^21 (sampled); from 2^22 on not accurate (the fp32
                     reduction fails), but the results stay in [-1, 1]
tan             1    |x| < 2^44 (reduction in fp64); not accurate beyond (may even be +-inf)
asin, acos      1    [-1, 1]
atan            1    all
atan2           1    all pairs (sampled); C99's special cases
sinh, cosh      1    all (fp64 internally); cosh measured 0
asinh, acosh    1    all (fp64 internally); acosh measured 0
atanh           1    all (fp64 internally); measured 0
pow             1    all pairs (sampled; fp64 internally); C99's special cases
sqrt            0    all (IEEE square root)
rsqrt           1    all (sqrt, quotient, one Newton step on the exact residual)
cbrt            1    all (fp64 Newton steps); measured 0
floor, ceil     0    exact
trunc, round    0    exact (round: halfway cases away from zero, as C)
rint, fabs      0    exact (rint: halfway cases to even)
fmod            0    exact (all pairs, sampled)
hypot           1    all pairs (sampled; fp64 internally); measured 0
==============  ===  ==========================================================================

Throughput (benchmarks/math_ulp.py, typical arguments in cache, 2-core AVX-512 machine, loops built
as the CPU backend builds them: 16 fp32 lanes, results scaled by 2^k with ``vscalefps``): exp 2.5
Gelem/s (1.2x numpy's), log 0.73x, sin 0.83x, sigmoid 2.0x numpy's 1 / (1 + exp(-x)); erf 1.6-1.8
Gelem/s (numpy has no fp32 erf; 1.46 before its e^L was built for its range, in the same runs).
"""
from __future__ import annotations

from . import exponential, special, trig, wide  # noqa: F401  (each registers its functions)
from .core import _ARITY, F32, F64, FUNCTIONS, HARDWARE_LDEXP, I32, I64, emit, use_hardware_ldexp

__all__ = ["F32", "F64", "FUNCTIONS", "HARDWARE_LDEXP", "I32", "I64", "_ARITY", "emit", "use_hardware_ldexp"]
