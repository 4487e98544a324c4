"""The combine step of reductions and scans, shared by the compiled backends:
``combiner(b, kind, dtypes, custom)`` returns ``combine(left, right) -> values``, one lane each, for
the IR's kinds (sum, prod, max, min, xor, argmax, argmin; ``custom`` for a combine region, which the
caller lowers). Left is the operand of the lower index: the order matters for argmax's ties and for
custom regions."""
from __future__ import annotations

import llvmlite.ir as ir

from . import casts
from . import scalar as lanes


class UnknownKind(NotImplementedError):
    pass


# kinds whose combine gives the same bits with its operands swapped (argmax's ties go to the lower
# index either way): a backend may combine a value with a partner's without ordering the two
COMMUTATIVE = frozenset({"sum", "prod", "max", "min", "xor", "argmax", "argmin"})


def combiner(b: ir.IRBuilder, kind: str, dtypes, custom=None, float_extremum=lanes.float_extremum):
    """``float_extremum(b, x, y, maximum, propagate_nan)``: a backend's float min/max (the GPU's
    instructions), by default the portable one."""
    if kind == "custom":
        return custom
    dtype = dtypes[0]

    if kind == "sum":
        def combine(left, right):
            if dtype.is_floating():
                return [lanes.float_binary(b, dtype, [left[0], right[0]], b.fadd)]
            return [b.xor(left[0], right[0]) if dtype.is_bool() else b.add(left[0], right[0])]
    elif kind == "prod":
        def combine(left, right):
            if dtype.is_floating():
                return [lanes.float_binary(b, dtype, [left[0], right[0]], b.fmul)]
            return [b.and_(left[0], right[0]) if dtype.is_bool() else b.mul(left[0], right[0])]
    elif kind in ("max", "min"):
        def combine(left, right):
            if dtype.is_floating():
                return [lanes.float_binary(b, dtype, [left[0], right[0]],
                                           lambda x, y: float_extremum(b, x, y, kind == "max", False))]
            return [lanes.int_extremum(b, left[0], right[0], kind == "max",
                                       dtype.is_int_signed() and not dtype.is_bool())]
    elif kind == "xor":
        def combine(left, right):
            return [b.xor(left[0], right[0])]
    elif kind in ("argmax", "argmin"):
        maximum = kind == "argmax"

        def combine(left, right):
            (lv, li), (rv, ri) = left, right
            if dtype.is_floating():
                x, y = casts.to_arithmetic(b, lv, dtype), casts.to_arithmetic(b, rv, dtype)
                better = b.fcmp_ordered(">" if maximum else "<", y, x)
                left_nan, right_nan = casts.is_nan(b, x), casts.is_nan(b, y)
                better = b.or_(better, b.and_(right_nan, b.not_(left_nan)))  # numpy: the first NaN wins
                tie = b.or_(b.fcmp_ordered("==", x, y), b.and_(left_nan, right_nan))
            else:
                cmp = b.icmp_signed if dtype.is_int_signed() and not dtype.is_bool() else b.icmp_unsigned
                better = cmp(">" if maximum else "<", rv, lv)
                tie = b.icmp_unsigned("==", rv, lv)
            take = b.or_(better, b.and_(tie, b.icmp_signed("<", ri, li)))
            return [b.select(take, rv, lv), b.select(take, ri, li)]
    else:
        raise UnknownKind(f"reduce kind {kind}")
    return combine
