"""The transfer functions of the axis-info analysis: per opcode, the results' claims from the operands'.

Each rule takes the operation and its operands' AxisInfo (floats, which have none, come in as
"unknown") and returns the result's AxisInfo, or a list for several results. Opcodes without a
rule give "unknown" (every claim 1), which is always true. Powers of two make ``gcd`` a ``min``.
The rules follow Triton's AxisInfo visitors where those are sound; where cutting a run into
shorter ones moves the run starts, ``divisibility_at`` says what the new starts are known to be.
Integer edge cases are as the IR spec (``compiler/ir/spec.py``) defines them: ``x // 0`` is all
ones, ``x % 0`` is ``x``, shifts by an amount outside [0, bits) give 0 (``shr`` of a negative
signed value: -1), i1 arithmetic is modulo 2, and wrap-around is treated as ``may_wrap`` says.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..ir import types as T
from ..ir.ops import Operation
from .axis_info import (MAX_DIVISIBILITY, AxisInfo, dims_of, divisibility_at, element_divisibility,
                        highest_power_of_two_divisor, make, may_wrap, unit_of, unknown)

Rule = Callable[[Operation, list], object]
_RULES: dict[str, Rule] = {}


def rule(*opcodes: str):
    def register(fn: Rule) -> Rule:
        for opcode in opcodes:
            _RULES[opcode] = fn
        return fn

    return register


def apply(op: Operation, infos: list[Optional[AxisInfo]]) -> list[Optional[AxisInfo]]:
    """The claims about ``op``'s results, from its operands' claims (None: a float operand)."""
    infos = [info if info is not None else unknown(v.type) for info, v in zip(infos, op.operands)]
    fn = _RULES.get(op.opcode)
    if fn is None:
        return [unknown(r.type) for r in op.results]
    out = fn(op, infos)
    return out if isinstance(out, list) else [out]


def _wrap(value: Optional[int], ty) -> Optional[int]:
    """``value`` as the integer type of ``ty`` holds it (two's complement wrap-around)."""
    scalar = ty.scalar
    if value is None or scalar.is_ptr() or scalar.is_floating():
        return None
    if scalar.is_bool():
        return value & 1
    bits = scalar.int_bitwidth
    value &= (1 << bits) - 1
    if scalar.is_int_signed() and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _cap(n: int) -> int:
    return min(n, MAX_DIVISIBILITY)


def _ones(ty) -> tuple[int, ...]:
    return (1,) * len(dims_of(ty))


def _constant(ty, value: int) -> AxisInfo:
    wrapped = _wrap(value, ty)
    return unknown(ty) if wrapped is None else make(ty, (), (), (), value=wrapped)


def _value_range(scalar, nonnegative: bool) -> tuple[int, int]:
    """The lowest and highest value an integer of ``scalar`` holds (at least 0 when ``nonnegative``)."""
    bits = scalar.int_bitwidth
    if scalar.is_bool():
        return 0, 1
    if scalar.is_int_unsigned():
        return 0, (1 << bits) - 1
    return (0 if nonnegative else -(1 << (bits - 1))), (1 << (bits - 1)) - 1


def _wrap_period(scalar) -> int:
    """How far apart the points are where values of ``scalar`` wrap: unsigned (and i1) values step
    from the maximum to 0 at multiples of 2**bits; signed ones also from the maximum to the minimum,
    halfway between, so every 2**(bits - 1)."""
    bits = scalar.int_bitwidth
    return 1 << (bits - 1) if scalar.is_int_signed() and not scalar.is_bool() else 1 << bits


def _wrapped(ty, contiguity, divisibility, constancy) -> AxisInfo:
    """Claims about exact values, for the values of ``ty`` that wrap them modulo 2**bits.

    Constancy survives, and so does divisibility (a multiple of 2**bits or more wraps to 0, which
    every power divides). A run survives in pieces that start at multiples of their length, as
    indices and as values, and are no longer than ``_wrap_period``: every wrap point is then a
    multiple of the piece length, so none falls inside a piece. The sign is unknown."""
    exact = AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy))
    period = _wrap_period(ty.scalar)
    pieces = [min(c, v, period) for c, v in zip(exact.contiguity, exact.divisibility)]
    return make(ty, pieces, [divisibility_at(exact, d, piece) for d, piece in enumerate(pieces)], exact.constancy)


# values --------------------------------------------------------------------------------------------
@rule("constant")
def _rule_constant(op, infos):
    ty = op.result.type
    value = op.attrs["value"]
    if ty.scalar.is_floating():
        return None
    return _constant(ty, int(value))


@rule("arange")
def _rule_arange(op, infos):
    start = op.attrs["start"]
    n = op.attrs["end"] - start
    return make(op.result.type, (n,), (highest_power_of_two_divisor(start),), (1,), nonnegative=start >= 0)


@rule("program_id", "num_programs")
def _rule_program_id(op, infos):
    return make(op.result.type, (1,), (1,), (1,), nonnegative=True)


# shapes --------------------------------------------------------------------------------------------
def _splat(ty, x: AxisInfo) -> AxisInfo:
    dims = dims_of(ty)
    return make(ty, (1,) * len(dims), (x.divisibility[0],) * len(dims), dims, x.value, x.nonnegative)


@rule("splat")
def _rule_splat(op, infos):
    if op.operands[0].type.is_block():
        return unknown(op.result.type)
    return _splat(op.result.type, infos[0])


@rule("broadcast")
def _rule_broadcast(op, infos):
    (x,) = infos
    ty = op.result.type
    source, target = dims_of(op.operands[0].type), dims_of(ty)
    if len(source) != len(target):
        return unknown(ty)
    contiguity, constancy = list(x.contiguity), list(x.constancy)
    for d, (s, n) in enumerate(zip(source, target)):
        if s == 1 and n != 1:
            contiguity[d], constancy[d] = 1, n
    return make(ty, contiguity, x.divisibility, constancy, x.value, x.nonnegative)


def _every_element_divisibility(x: AxisInfo, unit: int) -> int:
    """A divisor of every element: each dimension's claim about single elements holds for all."""
    return max(element_divisibility(x, d, unit) for d in range(x.rank))


@rule("reshape")
def _rule_reshape(op, infos):
    (x,) = infos
    ty = op.result.type
    unit = unit_of(ty)
    source, target = T.shape_of(op.operands[0].type), T.shape_of(ty)
    if not source:
        return _splat(ty, x)
    if not target:  # a one-element block to a scalar: index 0 starts every run
        return make(ty, (1,), (max(x.divisibility),), (1,), x.value, x.nonnegative)
    every = _every_element_divisibility(x, unit)
    rank = len(target)
    contiguity, divisibility, constancy = [1] * rank, [every] * rank, [1] * rank
    kept_source = [d for d, n in enumerate(source) if n != 1]
    kept_target = [d for d, n in enumerate(target) if n != 1]
    if [source[d] for d in kept_source] == [target[d] for d in kept_target]:
        # expand_dims / squeeze: the dimensions of size > 1 keep their claims
        for s, t in zip(kept_source, kept_target):
            contiguity[t], divisibility[t], constancy[t] = x.contiguity[s], x.divisibility[s], x.constancy[s]
        return make(ty, contiguity, divisibility, constancy, x.value, x.nonnegative)
    if all(k == n for k, n in zip(x.constancy, source)):
        constancy = list(target)
    last, size = source[-1], target[-1]
    if last % size == 0:
        # the new last dimension walks consecutive elements of one row of the old last dimension
        run = min(x.contiguity[-1], size)
        contiguity[-1] = run
        divisibility[-1] = divisibility_at(x, len(source) - 1, run, unit)
        constancy[-1] = max(constancy[-1], min(x.constancy[-1], size))
    return make(ty, contiguity, divisibility, constancy, x.value, x.nonnegative)


@rule("permute")
def _rule_permute(op, infos):
    (x,) = infos
    order = op.attrs["order"]
    return make(op.result.type, [x.contiguity[d] for d in order], [x.divisibility[d] for d in order],
                [x.constancy[d] for d in order], x.value, x.nonnegative)


@rule("split")
def _rule_split(op, infos):
    (x,) = infos
    last = x.rank - 1
    results = []
    for half, result in enumerate(op.results):
        ty = result.type
        if ty.is_block():
            results.append(make(ty, x.contiguity[:-1], x.divisibility[:-1], x.constancy[:-1],
                                nonnegative=x.nonnegative))
            continue
        along_last = x.divisibility[last] if half == 0 else element_divisibility(x, last, unit_of(ty))
        results.append(make(ty, (1,), (along_last,), (1,), nonnegative=x.nonnegative))
    return results


# hints: the user's promises, checked at run time by the interpreter's exec_hint ----------------------
def _hint_values(op, rank: int, scalar: bool) -> list[Optional[int]]:
    """Per dimension the promised value, or None; one value for several dimensions means every
    dimension for multiple_of and the last one for the others, as exec_hint reads them."""
    values = list(op.attrs["values"])
    if len(values) == rank and not scalar:
        return values
    if op.attrs["kind"] == "multiple_of":
        return [values[-1]] * rank
    if scalar:
        return [None]
    return [None] * (rank - 1) + [values[-1]]


def _hinted_divisibility(x: AxisInfo, dims, d: int, promised: int, run: int, unit: int) -> int:
    """What ``multiple_of(promised)`` gives at multiples of ``run`` along ``d``. The promise is about
    the starts of the values' true runs, which may be longer than the runs claimed: starts of
    claimed runs inside a longer one are only multiples of ``run * unit``."""
    true_run_known = run == dims[d] or x.constancy[d] > 1 or dims[d] == 1
    return promised if true_run_known else min(promised, run * unit)


@rule("hint")
def _rule_hint(op, infos):
    (x,) = infos
    ty = op.result.type
    dims = dims_of(ty)
    unit = unit_of(ty)
    kind = op.attrs["kind"]
    values = _hint_values(op, len(dims), not ty.is_block())
    contiguity, divisibility, constancy = list(x.contiguity), list(x.divisibility), list(x.constancy)
    source = op.operands[0].owner
    earlier = None  # a multiple_of promise just before this max_contiguous
    if kind == "max_contiguous" and source is not None and source.opcode == "hint" \
            and source.attrs["kind"] == "multiple_of":
        earlier = _hint_values(source, len(dims), not ty.is_block())
    for d, promised in enumerate(values):
        if promised is None:
            continue
        if kind == "multiple_of":
            divisibility[d] = max(divisibility[d],
                                  _hinted_divisibility(x, dims, d, promised, contiguity[d], unit))
        elif kind == "max_contiguous":
            # exec_hint checks a promise only where it divides the dimension: rely on no other
            if dims[d] % promised == 0:
                contiguity[d] = max(contiguity[d], promised)
            if earlier is not None and earlier[d] is not None:
                divisibility[d] = max(divisibility[d],
                                      _hinted_divisibility(x, dims, d, earlier[d], contiguity[d], unit))
        elif kind == "max_constancy" and dims[d] % promised == 0:
            constancy[d] = max(constancy[d], promised)
    return make(ty, contiguity, divisibility, constancy, x.value, x.nonnegative)


# arithmetic ----------------------------------------------------------------------------------------
def _sum(ty, a: AxisInfo, b: AxisInfo, subtract: bool, unit_a: int, unit_b: int, scale: int) -> AxisInfo:
    """a + b * scale (or a - b): a run of a plus a constant stretch of b stays a run; so does a
    constant stretch of a plus a run of b, for an addition."""
    contiguity, divisibility, constancy = [], [], []
    for d in range(a.rank):
        run = min(a.contiguity[d], b.constancy[d])
        if not subtract:
            run = max(run, min(a.constancy[d], b.contiguity[d]))
        contiguity.append(run)
        divisibility.append(min(divisibility_at(a, d, run, unit_a),
                                _cap(divisibility_at(b, d, run, unit_b) * scale)))
        constancy.append(min(a.constancy[d], b.constancy[d]))
    if may_wrap(ty):
        return _wrapped(ty, contiguity, divisibility, constancy)
    return make(ty, contiguity, divisibility, constancy, nonnegative=a.nonnegative and b.nonnegative and not subtract)


@rule("add", "sub")
def _rule_add(op, infos):
    a, b = infos
    ty = op.result.type
    if a.value is not None and b.value is not None:
        return _constant(ty, a.value + b.value if op.opcode == "add" else a.value - b.value)
    return _sum(ty, a, b, op.opcode == "sub", 1, 1, 1)


@rule("addptr")
def _rule_addptr(op, infos):
    pointer, offset = infos
    ty = op.result.type
    size = unit_of(ty)
    return _sum(ty, pointer, offset, False, size, 1, size)


def _elementwise(ty, a: AxisInfo, b: AxisInfo, divisibility, nonnegative: bool) -> AxisInfo:
    """Runs are lost, stretches where both operands are constant stay constant."""
    return make(ty, _ones(ty), [divisibility(d) for d in range(a.rank)],
                [min(x, y) for x, y in zip(a.constancy, b.constancy)], nonnegative=nonnegative)


@rule("mul")
def _rule_mul(op, infos):
    a, b = infos
    ty = op.result.type
    if a.value is not None and b.value is not None:
        return _constant(ty, a.value * b.value)
    if a.value == 0 or b.value == 0:
        return _constant(ty, 0)
    if b.value == 1:
        return a
    if a.value == 1:
        return b
    # the product wraps for unsigned and narrow types, and a wrapped product has no known sign
    return _elementwise(ty, a, b, lambda d: _cap(element_divisibility(a, d) * element_divisibility(b, d)),
                        a.nonnegative and b.nonnegative and not may_wrap(ty))


def _truncated_division(a: int, b: int) -> tuple[int, int]:
    """C's quotient and remainder (toward zero)."""
    quotient = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        quotient = -quotient
    return quotient, a - quotient * b


def _run_through_divisor(a: AxisInfo, b: AxisInfo, d: int) -> int:
    """The length g of aligned stretches where a non-negative run of ``a`` meets no multiple of
    ``b`` past its first element: a's runs cut into pieces of g starting at multiples of g, and b
    constant there and a multiple of g. 1 when ``a`` may be negative (C truncates toward zero)."""
    if not a.nonnegative or a.contiguity[d] == 1:
        return 1
    return min(a.contiguity[d], a.divisibility[d], b.constancy[d], element_divisibility(b, d))


@rule("floordiv")
def _rule_floordiv(op, infos):
    a, b = infos
    ty = op.result.type
    if b.value == 0:
        return _constant(ty, -1)  # what the GPU (and the interpreter) gives for x // 0
    if a.value is not None and b.value is not None:
        return _constant(ty, _truncated_division(a.value, b.value)[0])
    if b.value == 1:
        return a
    # x // 0 is all ones (-1 when signed), so a divisor that may be 0 leaves the sign unknown; the
    # runs need no such care: -1 across a piece is constant too
    constancy = [max(min(a.constancy[d], b.constancy[d]), _run_through_divisor(a, b, d)) for d in range(a.rank)]
    divisor_positive = b.value is not None and b.value > 0
    return make(ty, _ones(ty), _ones(ty), constancy, nonnegative=a.nonnegative and divisor_positive)


@rule("mod")
def _rule_mod(op, infos):
    a, b = infos
    ty = op.result.type
    if b.value == 0:
        return a  # x % 0 is x
    if a.value is not None and b.value is not None:
        return _constant(ty, _truncated_division(a.value, b.value)[1])
    if b.value in (1, -1):
        return _constant(ty, 0)
    # where r is 0, x % 0 is x: a piece of a run stays that run, and the claims below hold for it
    contiguity = [_run_through_divisor(a, b, d) for d in range(a.rank)]
    # x % r = x - q * r: a multiple of whatever divides both x and r
    divisibility = [min(divisibility_at(a, d, run), element_divisibility(b, d)) for d, run in enumerate(contiguity)]
    constancy = [min(a.constancy[d], b.constancy[d]) for d in range(a.rank)]
    return make(ty, contiguity, divisibility, constancy, nonnegative=a.nonnegative)


@rule("neg")
def _rule_neg(op, infos):
    (a,) = infos
    ty = op.result.type
    if a.value is not None:
        return _constant(ty, -a.value)
    return make(ty, _ones(ty), [element_divisibility(a, d) for d in range(a.rank)], a.constancy)


@rule("abs")
def _rule_abs(op, infos):
    (a,) = infos
    ty = op.result.type
    if a.nonnegative:
        return a
    if a.value is not None:
        return _constant(ty, abs(a.value))
    return make(ty, _ones(ty), [element_divisibility(a, d) for d in range(a.rank)], a.constancy)


def _shift_amount(b: AxisInfo, ty) -> Optional[int]:
    """A known shift amount, or None (also None for amounts past the bit width)."""
    if b.value is None or not 0 <= b.value < ty.scalar.int_bitwidth:
        return None
    return b.value


@rule("shl", "shr")
def _rule_shift(op, infos):
    a, b = infos
    ty = op.result.type
    bits = ty.scalar.int_bitwidth
    if b.value is not None and not 0 <= b.value < bits:
        if op.opcode == "shl" or a.nonnegative:
            return _constant(ty, 0)  # shifted out entirely (the interpreter's rule, and PTX's clamp)
        # the sign fill, -1 or 0: constant where the value is
        return make(ty, _ones(ty), _ones(ty), a.constancy)
    if b.value == 0:
        return a
    amount = _shift_amount(b, ty)
    if a.value is not None and amount is not None:
        return _constant(ty, a.value << amount if op.opcode == "shl" else a.value >> amount)
    constancy = [min(a.constancy[d], b.constancy[d]) for d in range(a.rank)]
    if op.opcode == "shl":
        factor = 1 << amount if amount is not None else 1
        divisibility = [_cap(element_divisibility(a, d) * factor) for d in range(a.rank)]
        return make(ty, _ones(ty), divisibility, constancy)
    divisibility = [max(1, element_divisibility(a, d) >> amount) if amount is not None else 1 for d in range(a.rank)]
    if amount is not None:
        # x >> k is floor(x / 2**k), whatever the sign: constant across pieces of a run that
        # start at multiples of 2**k
        for d in range(a.rank):
            if a.contiguity[d] > 1:
                piece = min(a.contiguity[d], a.divisibility[d], 1 << amount, b.constancy[d])
                constancy[d] = max(constancy[d], piece)
    return make(ty, _ones(ty), divisibility, constancy, nonnegative=a.nonnegative)


_BITWISE = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}


@rule("and", "or", "xor")
def _rule_bitwise(op, infos):
    a, b = infos
    ty = op.result.type
    if a.value is not None and b.value is not None:
        return _constant(ty, _BITWISE[op.opcode](a.value, b.value))
    if op.opcode == "and" and 0 in (a.value, b.value):
        return _constant(ty, 0)
    if ty.scalar.is_bool() and op.opcode == "or" and 1 in (a.value, b.value):
        return _constant(ty, 1)
    if op.opcode == "and":  # low zero bits of either operand are zero in the result
        return _elementwise(ty, a, b, lambda d: max(element_divisibility(a, d), element_divisibility(b, d)),
                            a.nonnegative or b.nonnegative)
    return _elementwise(ty, a, b, lambda d: min(element_divisibility(a, d), element_divisibility(b, d)),
                        a.nonnegative and b.nonnegative)


@rule("minimum", "maximum")
def _rule_minmax(op, infos):
    a, b = infos
    ty = op.result.type
    if a.value is not None and b.value is not None:
        return _constant(ty, min(a.value, b.value) if op.opcode == "minimum" else max(a.value, b.value))
    nonnegative = (a.nonnegative and b.nonnegative) if op.opcode == "minimum" else (a.nonnegative or b.nonnegative)
    return _elementwise(ty, a, b, lambda d: min(element_divisibility(a, d), element_divisibility(b, d)), nonnegative)


@rule("not")
def _rule_not(op, infos):
    (a,) = infos
    ty = op.result.type
    if a.value is not None:
        return _constant(ty, ~a.value)
    return make(ty, _ones(ty), _ones(ty), a.constancy)


_PREDICATES = {"lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
               "ge": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y}


@rule("cmp")
def _rule_cmp(op, infos):
    a, b = infos
    ty = op.result.type
    predicate = op.attrs["predicate"]
    if a.value is not None and b.value is not None:
        return _constant(ty, int(_PREDICATES[predicate](a.value, b.value)))
    constancy = [min(x, y) for x, y in zip(a.constancy, b.constancy)]
    # x < r and x >= r are the same across a piece [s, s + g) of a run of x when s and r are both
    # multiples of g steps; r > x and r <= x are the same comparisons written the other way round
    if predicate in ("lt", "ge", "gt", "le"):
        run, bound = (a, b) if predicate in ("lt", "ge") else (b, a)
        unit = unit_of(op.operands[0].type)
        for d in range(a.rank):
            if run.contiguity[d] > 1:
                piece = min(run.contiguity[d], run.divisibility[d] // unit,
                            element_divisibility(bound, d, unit) // unit, bound.constancy[d])
                constancy[d] = max(constancy[d], piece)
    return make(ty, _ones(ty), _ones(ty), constancy)


@rule("select")
def _rule_select(op, infos):
    condition, a, b = infos
    ty = op.result.type
    if condition.value is not None:
        return a if condition.value else b
    if a.value is not None and a.value == b.value:
        return a
    unit = unit_of(ty)
    contiguity = [min(a.contiguity[d], b.contiguity[d], condition.constancy[d]) for d in range(a.rank)]
    divisibility = [min(divisibility_at(a, d, run, unit), divisibility_at(b, d, run, unit))
                    for d, run in enumerate(contiguity)]
    constancy = [min(a.constancy[d], b.constancy[d], condition.constancy[d]) for d in range(a.rank)]
    return make(ty, contiguity, divisibility, constancy, nonnegative=a.nonnegative and b.nonnegative)


# conversions ---------------------------------------------------------------------------------------
def _keeps_values(source, target, nonnegative: bool) -> bool:
    """Whether every value ``source`` can hold here (at least 0 when ``nonnegative``) is one that
    ``target`` holds too, so that converting it changes nothing. u32 -> i32 does not: values from
    2**31 on become negative; neither does any narrowing cast."""
    low, high = _value_range(source, nonnegative)
    target_low, target_high = _value_range(target, False)
    return target_low <= low and high <= target_high


def _reinterpreted(ty, a: AxisInfo, values_kept: bool) -> AxisInfo:
    """An integer seen as another integer type: the same claims when the values are kept, else
    those that survive wrapping modulo 2**bits (see ``_wrapped``)."""
    if values_kept:
        return make(ty, a.contiguity, a.divisibility, a.constancy, nonnegative=a.nonnegative)
    return _wrapped(ty, a.contiguity, a.divisibility, a.constancy)


@rule("cast")
def _rule_cast(op, infos):
    (a,) = infos
    ty = op.result.type
    source, target = op.operands[0].type.scalar, ty.scalar
    if source.is_floating() or target.is_floating():
        return unknown(ty)
    if a.value is not None:
        return _constant(ty, int(a.value != 0) if target.is_bool() else a.value)
    if target.is_bool():  # x != 0
        return make(ty, _ones(ty), _ones(ty), a.constancy)
    if source.is_bool():  # i1 zero-extends: 0 or 1
        return make(ty, _ones(ty), _ones(ty), a.constancy, nonnegative=True)
    return _reinterpreted(ty, a, _keeps_values(source, target, a.nonnegative))


@rule("bitcast")
def _rule_bitcast(op, infos):
    (a,) = infos
    ty = op.result.type
    source, target = op.operands[0].type.scalar, ty.scalar
    if source.is_ptr() and target.is_ptr():
        same_size = unit_of(op.operands[0].type) == unit_of(ty)
        return make(ty, a.contiguity if same_size else _ones(ty), a.divisibility, a.constancy)
    if source.is_floating() or target.is_floating() or source.is_ptr() or target.is_ptr():
        return make(ty, _ones(ty), _ones(ty), a.constancy)
    # the same width: the bits name the same value only where both types hold it
    return _reinterpreted(ty, a, _keeps_values(source, target, a.nonnegative))


@rule("ptr_to_int", "int_to_ptr")
def _rule_pointer_int(op, infos):
    # The interpreter's pointers are tagged, not addresses: only constancy carries over.
    (a,) = infos
    ty = op.result.type
    return make(ty, _ones(ty), _ones(ty), a.constancy)
