"""``tl.extra.libdevice``: the NVIDIA libdevice math functions Triton kernels call.

Import it as Triton code does: ``from triton.language.extra import libdevice`` (also
``triton.language.extra.cuda.libdevice``). Each function takes the argument types libdevice has
(mostly fp32 or fp64, as in Triton); other types are first promoted to a common type, as Triton
does, and a type no signature takes is a compile error naming the accepted ones. Every call
becomes one ``libdevice`` IR operation with the function's name and libdevice symbol; the
interpreter evaluates fp32 in fp64 and rounds once (see numerics/libdevice.py).
"""
from __future__ import annotations

from typing import Optional

from ...compiler.ir import types as T
from ..core import builtin, _semantic

_ARITY: dict[str, int] = {}


def _function(name: str, signatures: dict, arity: int, to_bool: bool = False, doc: str = ""):
    @builtin
    def fn(*args):
        if len(args) != arity:
            raise TypeError(f"libdevice.{name} takes {arity} argument{'s' if arity > 1 else ''}, got {len(args)}")
        sem = _semantic()
        result = sem.libdevice(name, args, signatures)
        return sem.cast(result, T.int1) if to_bool else result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"libdevice's {name}, elementwise."
    _ARITY[name] = arity
    return fn


def _float(name: str, arity: int = 1, f32: Optional[str] = None, f64: Optional[str] = None, result=None,
           doc: str = ""):
    """A function with an fp32 (``__nv_<name>f``) and an fp64 (``__nv_<name>``) version."""
    f32 = f32 or f"__nv_{name}f"
    f64 = f64 or f"__nv_{name}"
    signatures = {("fp32",) * arity: (f32, result or "fp32"), ("fp64",) * arity: (f64, result or "fp64")}
    return _function(name, signatures, arity, doc=doc)


# exponentials and logarithms
exp = _float("exp")
exp2 = _float("exp2")
exp10 = _float("exp10")
expm1 = _float("expm1")
log = _float("log")
log2 = _float("log2")
log10 = _float("log10")
log1p = _float("log1p")
pow = _function("pow", {
    ("fp32", "int32"): ("__nv_powif", "fp32"), ("fp64", "int32"): ("__nv_powi", "fp64"),
    ("fp32", "fp32"): ("__nv_powf", "fp32"), ("fp64", "fp64"): ("__nv_pow", "fp64"),
}, 2, doc="``x ** y`` (an int32 ``y`` selects libdevice's powi).")
fast_expf = _function("fast_expf", {("fp32",): ("__nv_fast_expf", "fp32")}, 1)
fast_logf = _function("fast_logf", {("fp32",): ("__nv_fast_logf", "fp32")}, 1)

# roots and division
sqrt = _float("sqrt")
sqrt_rn = _float("sqrt_rn", f32="__nv_fsqrt_rn", f64="__nv_dsqrt_rn", doc="Square root, rounded to nearest.")
rsqrt = _float("rsqrt")
cbrt = _float("cbrt")
rcp_rn = _float("rcp_rn", f32="__nv_frcp_rn", f64="__nv_drcp_rn", doc="``1 / x``, rounded to nearest.")
div_rn = _float("div_rn", 2, f32="__nv_fdiv_rn", f64="__nv_ddiv_rn", doc="``x / y``, rounded to nearest.")
div_rz = _float("div_rz", 2, f32="__nv_fdiv_rz", f64="__nv_ddiv_rz", doc="``x / y``, rounded toward zero.")
fast_dividef = _function("fast_dividef", {("fp32", "fp32"): ("__nv_fast_fdividef", "fp32")}, 2)
hypot = _float("hypot", 2)
fma = _float("fma", 3, doc="``x * y + z`` with one rounding.")

# trigonometric and hyperbolic
sin = _float("sin")
cos = _float("cos")
tan = _float("tan")
asin = _float("asin")
acos = _float("acos")
atan = _float("atan")
atan2 = _float("atan2", 2)
sinh = _float("sinh")
cosh = _float("cosh")
tanh = _float("tanh")
asinh = _float("asinh")
acosh = _float("acosh")
atanh = _float("atanh")

# special functions
erf = _float("erf")
erfc = _float("erfc")
erfinv = _float("erfinv")
lgamma = _float("lgamma")
tgamma = _float("tgamma")

# rounding, remainders, sign and exponent manipulation
floor = _float("floor")
ceil = _float("ceil")
trunc = _float("trunc")
round = _float("round", doc="Round to the nearest integer, halfway cases away from zero.")
rint = _float("rint", doc="Round to the nearest integer, halfway cases to even.")
nearbyint = _float("nearbyint", doc="Round to the nearest integer, halfway cases to even.")
llrint = _float("llrint", result="int64", doc="rint, converted to int64.")
llround = _float("llround", result="int64", doc="round, converted to int64.")
fmod = _float("fmod", 2)
remainder = _float("remainder", 2, doc="IEEE remainder: ``x - n * y`` with n = x / y rounded to even.")
fmin = _float("fmin", 2)
fmax = _float("fmax", 2)
fdim = _float("fdim", 2)
copysign = _float("copysign", 2)
nextafter = _float("nextafter", 2)
saturatef = _function("saturatef", {("fp32",): ("__nv_saturatef", "fp32")}, 1)
ldexp = _function("ldexp", {("fp32", "int32"): ("__nv_ldexpf", "fp32"),
                            ("fp64", "int32"): ("__nv_ldexp", "fp64")}, 2, doc="``x * 2**n``.")
scalbn = _function("scalbn", {("fp32", "int32"): ("__nv_scalbnf", "fp32"),
                              ("fp64", "int32"): ("__nv_scalbn", "fp64")}, 2, doc="``x * 2**n``.")
ilogb = _float("ilogb", result="int32", doc="The unbiased exponent of x (INT_MIN for 0 and NaN, INT_MAX for inf).")
logb = _float("logb")
abs = _function("abs", {("int32",): ("__nv_abs", "int32"), ("int64",): ("__nv_llabs", "int64"),
                        ("fp32",): ("__nv_fabsf", "fp32"), ("fp64",): ("__nv_fabs", "fp64")}, 1)

# classification (isnan, isinf, isfinited and finitef give booleans, as in Triton)
isnan = _function("isnan", {("fp32",): ("__nv_isnanf", "int32"), ("fp64",): ("__nv_isnand", "int32")}, 1, to_bool=True)
isinf = _function("isinf", {("fp32",): ("__nv_isinff", "int32"), ("fp64",): ("__nv_isinfd", "int32")}, 1, to_bool=True)
isfinited = _function("isfinited", {("fp64",): ("__nv_isfinited", "int32")}, 1, to_bool=True)
finitef = _function("finitef", {("fp32",): ("__nv_finitef", "int32")}, 1, to_bool=True)
signbit = _function("signbit", {("fp32",): ("__nv_signbitf", "int32"), ("fp64",): ("__nv_signbitd", "int32")}, 1,
                    doc="1 (int32) where the sign bit is set, else 0.")

# integer bit functions
popc = _function("popc", {("int32",): ("__nv_popc", "int32"), ("int64",): ("__nv_popcll", "int32")}, 1,
                 doc="The number of set bits.")
clz = _function("clz", {("int32",): ("__nv_clz", "int32"), ("int64",): ("__nv_clzll", "int32")}, 1,
                doc="The number of leading zero bits.")

from .libdevice_integer import brev, byte_perm, ffs, hadd, mul24, mulhi, rhadd, sad  # noqa: E402,F401
from .libdevice_integer import NAMES as _INTEGER_NAMES  # noqa: E402

__all__ = sorted([*_ARITY, *_INTEGER_NAMES])  # noqa: PLE0605 - a list
