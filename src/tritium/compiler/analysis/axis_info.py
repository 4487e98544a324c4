"""Axis info: what the compiler knows at compile time about each integer and pointer value's layout.

For every integer, boolean or pointer value (scalar or block) and every dimension ``d`` of its
block (scalars count as one dimension of size 1), three powers of two, as Triton defines them
(``lib/Analysis/AxisInfo.cpp``):

- ``contiguity[d]``: along ``d`` the value falls into runs of this length, aligned at multiples of
  it (the runs start at indices 0, c, 2c, ...), in which each element is the previous one plus 1
  (for pointers: plus one element, i.e. the element size in bytes);
- ``divisibility[d]``: the first element of every such run (every element whose index along ``d``
  is a multiple of ``contiguity[d]``, whatever its indices along the other dimensions) is a multiple
  of this; for pointers, of the byte address;
- ``constancy[d]``: along ``d`` the value falls into aligned runs of this length of equal elements.

A claim of 1 says nothing. Contiguity and constancy never exceed the dimension's size;
divisibility is capped at ``MAX_DIVISIBILITY`` (zero is a multiple of everything).

Two facts beyond Triton's ride along because some rules need them: ``value``, the constant every
element equals when that is known, and ``nonnegative``, true when every element is known to be at
least 0. C's truncating ``//`` and ``%`` keep runs only for non-negative dividends, so their rules
use it.

Wrap-around: like Triton's, the rules assume that ``add``, ``sub`` and ``mul`` of signed 32- and
64-bit integers do not overflow (an overflowing int32 index is a kernel's mistake, which debug mode
reports; int64 indices come nowhere near the limits). Everything else wraps as the IR spec says,
and the claims hold through it (``may_wrap``): unsigned, i1 (modulo 2), i8 and i16 arithmetic, and
casts that narrow or reinterpret.

Rules are written to be sound where Triton's are loose: when a run of ``c`` is cut into shorter
runs of ``g``, the first elements of the new runs are only known to be multiples of
``min(divisibility, g * unit)`` (see ``divisibility_at``). The interpreter can check every claim
against the values it computes (``TRITIUM_CHECK_ANALYSIS=1``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Optional

from ..ir import types as T
from ..ir.ops import Function, Operation, Region, Value

MAX_DIVISIBILITY = 1 << 62
# Rounds of a loop's fixpoint before its carried values are given up as unknown (each round can
# only lower a claim, so a loop over n carried values settles in far fewer rounds than this).
_MAX_LOOP_ROUNDS = 32


def highest_power_of_two_divisor(n: int) -> int:
    """The largest power of two dividing ``n`` (``MAX_DIVISIBILITY`` for zero)."""
    if n == 0:
        return MAX_DIVISIBILITY
    return min(n & -n, MAX_DIVISIBILITY)


@dataclass(frozen=True)
class AxisInfo:
    """The claims about one value, one entry per dimension (a scalar has one dimension of size 1)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    value: Optional[int] = None  # the constant every element equals, when known
    nonnegative: bool = False  # every element >= 0, when known

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def __str__(self) -> str:
        divisibility = ", ".join(_power_text(v) for v in self.divisibility)
        text = f"contiguity={list(self.contiguity)} divisibility=[{divisibility}] constancy={list(self.constancy)}"
        if self.value is not None:
            text += f" value={self.value}"
        return text + (" nonnegative" if self.nonnegative else "")


def _power_text(n: int) -> str:
    return f"2**{n.bit_length() - 1}" if n >= 1 << 20 else str(n)


def dims_of(ty) -> tuple[int, ...]:
    """The dimension sizes claims are made over: a block's shape, (1,) for a scalar."""
    return T.shape_of(ty) or (1,)


def unit_of(ty) -> int:
    """What one step of a contiguous run adds to a value of ``ty``: 1, or a pointer's element size."""
    scalar = ty.scalar
    if scalar.is_ptr():
        element = scalar.element_ty
        return 8 if element.is_ptr() else element.itemsize
    return 1


def is_tracked(ty) -> bool:
    """Integers (booleans included) and pointers have axis info; floats do not."""
    scalar = ty.scalar
    return scalar.is_ptr() or scalar.is_int()


def may_wrap(ty) -> bool:
    """Whether ``add``, ``sub`` and ``mul`` of ``ty`` wrap around by design, so that claims must hold
    through the wrap: unsigned integers (hashes, random numbers), i1 (modulo 2), i8 and i16. Signed
    32- and 64-bit arithmetic is assumed not to overflow, and pointers do not."""
    scalar = ty.scalar
    if scalar.is_ptr():
        return False
    return scalar.is_bool() or scalar.is_int_unsigned() or scalar.int_bitwidth < 32


def make(ty, contiguity, divisibility, constancy, value=None, nonnegative=False) -> AxisInfo:
    """An AxisInfo for a value of ``ty``, with claims capped at the dimension sizes; a known
    constant gets the claims that follow from it."""
    dims = dims_of(ty)
    if value is not None:
        divisor = highest_power_of_two_divisor(value)
        return AxisInfo((1,) * len(dims), (divisor,) * len(dims), dims, value, value >= 0)
    contiguity = tuple(max(1, min(c, n)) for c, n in zip(contiguity, dims))
    constancy = tuple(max(1, min(k, n)) for k, n in zip(constancy, dims))
    divisibility = tuple(max(1, min(v, MAX_DIVISIBILITY)) for v in divisibility)
    nonnegative = nonnegative or (ty.scalar.is_int_unsigned() or ty.scalar.is_bool())
    return AxisInfo(contiguity, divisibility, constancy, None, nonnegative)


def unknown(ty) -> AxisInfo:
    """Nothing known: every claim 1."""
    rank = len(dims_of(ty))
    return make(ty, (1,) * rank, (1,) * rank, (1,) * rank)


def divisibility_at(info: AxisInfo, dim: int, group: int, unit: int = 1) -> int:
    """The divisibility of the elements at indices that are multiples of ``group`` along ``dim``.

    Where ``group`` is a multiple of the run length they are run starts; inside a run of ``c`` they
    are a start plus a multiple of ``group`` steps of ``unit``, so a multiple of
    ``min(divisibility, group * unit)``."""
    run = info.contiguity[dim]
    if run == 1 or group >= run:
        return info.divisibility[dim]
    return min(info.divisibility[dim], group * unit)


def element_divisibility(info: AxisInfo, dim: int, unit: int = 1) -> int:
    """The divisibility of every element (each element as a run of its own along ``dim``)."""
    return divisibility_at(info, dim, 1, unit)


def meet(ty, a: Optional[AxisInfo], b: Optional[AxisInfo]) -> Optional[AxisInfo]:
    """Claims that hold for both ``a`` and ``b`` (a value that may be either)."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    unit = unit_of(ty)
    contiguity = tuple(min(x, y) for x, y in zip(a.contiguity, b.contiguity))
    divisibility = tuple(min(divisibility_at(a, d, c, unit), divisibility_at(b, d, c, unit))
                         for d, c in enumerate(contiguity))
    constancy = tuple(min(x, y) for x, y in zip(a.constancy, b.constancy))
    value = a.value if a.value is not None and a.value == b.value else None
    if value is not None:
        return make(ty, contiguity, divisibility, constancy, value)
    return AxisInfo(contiguity, divisibility, constancy, None, a.nonnegative and b.nonnegative)


class AxisInfoMap:
    """The axis info of every integer and pointer value of one function."""

    def __init__(self, fn: Function, infos: dict[int, AxisInfo]):
        self.fn = fn
        self._infos = infos

    def get(self, value: Value) -> Optional[AxisInfo]:
        """The claims about ``value``, or None for values that have none (floats)."""
        return self._infos.get(value.id)

    def __contains__(self, value: Value) -> bool:
        return value.id in self._infos

    def format(self) -> str:
        """The function's values with their claims, one per line, named as ``tritium ir`` numbers
        them (%0, %1, ... in order of definition)."""
        lines = [f"axis info of @{self.fn.name}:"]
        for name, value, op in _named_values(self.fn):
            info = self.get(value)
            if info is None:
                continue
            what = op.opcode if op is not None else "argument"
            lines.append(f"  {name} = {what} : {getattr(value.type, 'ir_name', value.type)}  {info}")
        return "\n".join(lines)


def _named_values(fn: Function) -> Iterator[tuple[str, Value, Optional[Operation]]]:
    """(name, value, defining op or None) named as the IR printer names them: arguments after the
    kernel's parameters, every other value %0, %1, ... in order of definition."""
    counter = iter(range(1 << 62))
    for i, arg in enumerate(fn.args):
        name = fn.arg_names[i] if i < len(fn.arg_names) else None
        yield (f"%{name}" if name else f"%{next(counter)}"), arg, None

    def region(r: Region):
        for op in r.ops:
            for result in op.results:
                yield f"%{next(counter)}", result, op
            for nested in op.regions:
                for arg in nested.args:
                    yield f"%{next(counter)}", arg, None
                yield from region(nested)

    yield from region(fn.body)


# the analysis ---------------------------------------------------------------------------------------
def _argument_info(value: Value, attrs: dict) -> Optional[AxisInfo]:
    ty = value.type
    if not is_tracked(ty):
        return None
    if attrs.get("equal_to_1") and not ty.scalar.is_ptr():
        return make(ty, (1,), (1,), (1,), value=1)
    divisibility = attrs.get("divisibility") or 1
    return make(ty, (1,), (int(divisibility),), (1,), nonnegative=bool(attrs.get("nonnegative")))


def _constant_of(value: Value) -> Optional[int]:
    """The integer ``value`` is a constant (or a splat of one) of, else None."""
    op = value.owner
    while op is not None and op.opcode == "splat":
        op = op.operands[0].owner
    if op is None or op.opcode != "constant" or isinstance(op.attrs.get("value"), float):
        return None
    constant = op.attrs.get("value")
    return constant if isinstance(constant, int) else None


_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def assumed_nonnegative(fn: Function) -> set[int]:
    """Ids of the values some ``tl.assume`` promises to be non-negative: ``x >= c`` with c >= 0 or
    ``x > c`` with c >= -1 (either side). A promise is a fact about its value wherever it is used
    (Triton's meaning: a false one is undefined behaviour; the interpreter reports it)."""
    found = set()
    for op in fn.walk():
        if op.opcode != "assume":
            continue
        condition = op.operands[0].owner
        if condition is None or condition.opcode != "cmp":
            continue
        lhs, rhs = condition.operands
        predicate = condition.attrs["predicate"]
        if _constant_of(lhs) is not None and _constant_of(rhs) is None:
            lhs, rhs, predicate = rhs, lhs, _MIRRORED.get(predicate, predicate)
        bound = _constant_of(rhs)
        if bound is None or lhs.type.scalar.is_ptr() or not lhs.type.scalar.is_int():
            continue
        if (predicate == "ge" and bound >= 0) or (predicate == "gt" and bound >= -1):
            found.add(lhs.id)
    return found


class _Analysis:
    def __init__(self, fn: Function, trust_hints: bool):
        self.infos: dict[int, AxisInfo] = {}
        self.trust_hints = trust_hints
        self.assumed_nonnegative = assumed_nonnegative(fn) if trust_hints else set()
        attrs = getattr(fn, "arg_attrs", None) or []
        for i, arg in enumerate(fn.args):
            info = _argument_info(arg, attrs[i] if i < len(attrs) and attrs[i] else {})
            self.set(arg, info)

    def info(self, value: Value) -> Optional[AxisInfo]:
        return self.infos.get(value.id)

    def set(self, value: Value, info: Optional[AxisInfo]) -> None:
        if info is None:
            self.infos.pop(value.id, None)
        else:
            if value.id in self.assumed_nonnegative and not info.nonnegative:
                info = replace(info, nonnegative=True)
            self.infos[value.id] = info

    def run_region(self, region: Region, args: list[Optional[AxisInfo]]) -> list[Optional[AxisInfo]]:
        """Analyzes ``region`` with ``args`` for its arguments; returns its terminator's operands' info."""
        for value, info in zip(region.args, args):
            self.set(value, info)
        for op in region.ops:
            if op.opcode in ("yield", "condition"):
                return [self.info(v) for v in op.operands]
            self.run_op(op)
        return []

    def run_op(self, op: Operation) -> None:
        control = _CONTROL_FLOW.get(op.opcode)
        if control is not None:
            results = control(self, op)
        elif op.regions:  # reduce and scan: combine regions see unknown scalars
            for region in op.regions:
                self.run_region(region, [unknown(a.type) if is_tracked(a.type) else None for a in region.args])
            results = [unknown(r.type) for r in op.results]
        elif op.opcode == "hint" and not self.trust_hints:
            results = [self.info(op.operands[0])]
        else:
            results = axis_rules.apply(op, [self.info(v) for v in op.operands])
        for value, info in zip(op.results, results):
            self.set(value, info if is_tracked(value.type) else None)

    # control flow ---------------------------------------------------------------------------------
    def run_if(self, op: Operation) -> list[Optional[AxisInfo]]:
        then_values = self.run_region(op.regions[0], [])
        else_values = self.run_region(op.regions[1], [])
        return [meet(r.type, a, b) for r, a, b in zip(op.results, then_values, else_values)]

    def fixpoint(self, types, carried, one_round):
        """Runs ``one_round(carried) -> (values fed back, results)`` until the carried claims settle:
        each round the carried claims become what holds for both their value so far and the one
        the body feeds back."""
        results = None
        for _ in range(_MAX_LOOP_ROUNDS):
            fed_back, results = one_round(carried)
            settled = [meet(t, c, f) for t, c, f in zip(types, carried, fed_back)]
            if settled == carried:
                return results
            carried = settled
        carried = [unknown(t) if is_tracked(t) else None for t in types]
        return one_round(carried)[1]

    def run_for(self, op: Operation) -> list[Optional[AxisInfo]]:
        lower, _, step, *inits = op.operands
        body = op.regions[0]
        iv = body.args[0]
        lower_info, step_info = self.info(lower), self.info(step)
        if lower_info is not None and step_info is not None:
            # the induction variable is lower + t * step
            iv_info = make(iv.type, (1,), (min(lower_info.divisibility[0], step_info.divisibility[0]),), (1,),
                           nonnegative=lower_info.nonnegative and step_info.nonnegative and not may_wrap(iv.type))
        else:
            iv_info = unknown(iv.type)
        types = [v.type for v in inits]

        def one_round(carried):
            fed_back = self.run_region(body, [iv_info] + carried)
            return fed_back, carried

        return self.fixpoint(types, [self.info(v) for v in inits], one_round)

    def run_while(self, op: Operation) -> list[Optional[AxisInfo]]:
        before, after = op.regions
        types = [v.type for v in op.operands]

        def one_round(carried):
            forwarded = self.run_region(before, carried)[1:]
            fed_back = self.run_region(after, forwarded)
            return fed_back, forwarded

        return self.fixpoint(types, [self.info(v) for v in op.operands], one_round)


_CONTROL_FLOW = {"if": _Analysis.run_if, "for": _Analysis.run_for, "while": _Analysis.run_while}


def analyze_axis_info(fn: Function, trust_hints: bool = True) -> AxisInfoMap:
    """The axis info of every integer and pointer value of ``fn``, seeded from ``fn.arg_attrs``
    (per argument: ``divisibility``, for pointers of the byte address; ``equal_to_1``; and
    ``nonnegative`` for an integer known to be at least 0). Arguments without facts: nothing known.
    ``trust_hints=False``: ``tl.multiple_of`` / ``max_contiguous`` / ``max_constancy`` and
    ``tl.assume`` add nothing, so every claim follows from the arithmetic alone (docs/language.md,
    "Hints")."""
    analysis = _Analysis(fn, trust_hints)
    analysis.run_region(fn.body, [])
    return AxisInfoMap(fn, analysis.infos)


# The transfer functions use the helpers above, so they are imported once those exist.
from . import axis_rules  # noqa: E402
