"""``tl.math``: elementwise math. Names, signatures and dtype rules follow triton.language.math.

The functions of one float argument (exp, exp2, log, log2, cos, sin, sqrt, sqrt_rn, rsqrt, erf,
floor, ceil) are the IR spec's math opcodes, one function each, made here from the spec
(``_BY_OPCODE``). They and div_rn accept fp32 and fp64 only, as in Triton: an fp16 or bf16
argument raises ValueError naming the dtype.
"""
from __future__ import annotations

from ..compiler.ir.spec import MATH_OPCODES as _MATH_OPCODES
from .core import _semantic, builtin, unwrap


def _unary(name: str):
    def fn(x):
        return _semantic().math(name, x)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of ``x``."
    return builtin(fn)  # named first: Python's argument errors name the function


# tl.math.exp ... tl.math.ceil: one function per math opcode of the IR spec, of the same name.
_BY_OPCODE = {name: _unary(name) for name in sorted(_MATH_OPCODES)}
globals().update(_BY_OPCODE)


@builtin
def abs(x):
    """Elementwise absolute value (any numeric dtype)."""
    return _semantic().abs(x)


@builtin
def fma(x, y, z):
    """Elementwise ``x * y + z`` with a single rounding."""
    return _semantic().fma(x, y, z)


@builtin
def div_rn(x, y):
    """Elementwise ``x / y`` rounded to nearest (fp32/fp64)."""
    sem = _semantic()
    x, y = sem._promote(x, y, div_or_mod=True)
    if x.dtype.name not in ("fp32", "fp64"):
        raise ValueError(f"Expected dtype ['fp32', 'fp64'] but got {x.dtype}")
    return sem._emit("div", [x, y], x.type)


@builtin
def fdiv(x, y, ieee_rounding=False, approx=False):
    """Elementwise floating-point division, typed as Triton 3.9 types ``/`` (fp16 and bf16 operands
    divide in fp32; two integer operands are refused). Default: Triton's ``/`` (div.full.f32 on a GPU,
    within 2 ulp). ``ieee_rounding=True``: correctly rounded. ``approx=True`` (fp32 only; not with
    ``ieee_rounding``): div.approx.f32 on a GPU, ``x * (1 / y)``, within 2 ulp for
    ``2**-126 <= |y| <= 2**126`` and ``x * 0`` beyond (the reciprocal underflows); the host backends give
    the correctly rounded quotient in that range and the GPU's zero (NaN for an infinite ``x``) beyond."""
    sem = _semantic()
    ieee_rounding, approx = bool(unwrap(ieee_rounding)), bool(unwrap(approx))
    if ieee_rounding and approx:
        raise ValueError("approx and ieee_rounding cannot both be True: pass one of them")
    x, y = sem._promote(unwrap(x), unwrap(y), div_or_mod=True)
    if not x.dtype.is_floating():
        raise TypeError(f"fdiv requires floating-point operands after type promotion, got {x.dtype}: "
                        "write 2.0, not 2, or cast an operand with .to(tl.float32)")
    if approx:
        if not x.dtype.is_fp32():
            raise ValueError(f"approx division requires float32 operands, got {x.dtype}: cast them with "
                             ".to(tl.float32), or drop approx=True")
        return sem._emit("div", [x, y], x.type, {"rounding": "approx"})
    return sem._emit("div", [x, y], x.type) if ieee_rounding else sem.approximate_div(x, y)


@builtin
def umulhi(x, y):
    """The most significant 32 (or 64) bits of the product of two integers."""
    sem = _semantic()
    x, y = sem._promote(x, y)
    if x.dtype.name not in ("int32", "int64", "uint32", "uint64"):
        raise ValueError(f"Expected dtype ['int32', 'int64', 'uint32', 'uint64'] but got {x.dtype}")
    return sem._emit("umulhi", [x, y], x.type)


@builtin
def maximum(x, y, propagate_nan="none"):
    from .core import unwrap

    return _semantic().minmax("maximum", x, y, _nan_mode(unwrap(propagate_nan)))


@builtin
def minimum(x, y, propagate_nan="none"):
    from .core import unwrap

    return _semantic().minmax("minimum", x, y, _nan_mode(unwrap(propagate_nan)))


def _nan_mode(value) -> str:
    text = str(getattr(value, "name", value)).lower()
    if text in ("none", "propagate_nan.none", "0", "false"):
        return "none"
    if text in ("all", "propagate_nan.all", "1", "true"):
        return "all"
    raise ValueError(f"propagate_nan must be tl.PropagateNan.NONE or ALL, got {value!r}")


@builtin
def clamp(x, min, max, propagate_nan="none"):
    """``minimum(maximum(x, min), max)``: floats with ``propagate_nan``, integers by the dtype's
    signedness (``min > max`` gives ``max``)."""
    return _semantic().clamp(x, min, max, _nan_mode(propagate_nan))
