"""Arithmetic as an NVIDIA GPU does it, on numpy arrays: the executable definition of the IR spec's
numerics, used by constant folding, the interpreter, and the compiled backends' tests.

- ``arithmetic``: casts (saturating float -> int, rounding modes, fp8), C integer division, fma,
  ``dot`` with tf32, tree reductions, Philox, the bitonic sort network;
- ``elementwise``: each elementwise opcode of the IR (add ... select) on arrays, with the spec's
  edge cases (i1 modulo 2, shifts past the width, NaN-aware min/max, signed zeros);
- ``libm`` / ``vector_math`` / ``native_loops``: transcendental functions evaluated in fp64 and
  rounded once, in loops compiled with llvmlite;
- ``libdevice``: the ``tl.extra.libdevice`` functions.

This package imports no compiler pass and no backend: both sides import it.
"""
