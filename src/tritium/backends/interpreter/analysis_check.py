"""Checks the compiler's axis-info and mask claims against the values the interpreter computes.

With ``TRITIUM_CHECK_ANALYSIS=1`` every load, store and atomic compares, before it runs, what
``compiler.analysis`` claims about its pointer, its mask and the integer values they are computed
from (contiguity, divisibility, constancy, non-negativity, which the division rules rely on; box
masks) with their actual values in the active programs, and raises ``AnalysisClaimError`` naming
the value, the claim and a program where it is false. Compiled backends turn these claims into
vector loads and unmasked fast paths, so a false claim there is wrong output; here it is a clear
error. ``=1`` samples, cheap enough to leave on for a test suite: the first few times a function
computes each value, in a few programs of the batch; ``=all`` checks every execution in every
program (``config.check_analysis``).

The check wraps the access handlers of the executor's tables, as debug mode's checks do; symbolic
(affine) values are materialised for it.
"""
from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ... import config
from ...compiler.analysis.axis_info import AxisInfo, analyze_axis_info, dims_of, is_tracked, unit_of
from ...compiler.analysis.masks import MaskInfo, classify_mask
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Value
from ...compiler.ir.spec import POINTER_READS
from ...errors import TritonError, render_location
from .affine import Affine
from .memory import Memory

_SAMPLED_EXECUTIONS = 4  # per access operand (pointer, mask) and function, under =1
_SAMPLED_SOURCES = 2  # per value they are computed from and function, under =1
_SAMPLED_PROGRAMS = 8  # per batch, under =1
_SLICE_LIMIT = 32  # values checked per access: the pointer, the mask, and what they are computed from
_ACCESSES = ("load", "store", "atomic_rmw", "atomic_cas")
_MASK_SLOT = {"load": 1, "store": 2, "atomic_rmw": 2}  # operand index of the optional mask


class AnalysisClaimError(TritonError, AssertionError):
    """An axis-info or mask claim of the compiler is false for values a kernel computed: a bug in
    tritium's analysis, not in the kernel."""


def check_limit() -> Optional[int]:
    """TRITIUM_CHECK_ANALYSIS (``config.check_analysis``): None when off, else how many times each
    compiled function's access operands are checked (0: every time, for ``=all``)."""
    setting = config.check_analysis()
    if not setting:
        return None
    return 0 if setting == "all" else _SAMPLED_EXECUTIONS


@dataclass(frozen=True)
class _AccessPlan:
    """What to check at one access: values with some claim above 1, and the mask when it is a box."""

    values: tuple[tuple[Value, AxisInfo, bool], ...]  # (value, claims, an operand of the access?)
    mask: Optional[tuple[Value, MaskInfo]]


class _FunctionClaims:
    """One function's analysis and, per access, what to check there (kept as long as the function)."""

    def __init__(self, fn: Function, trust_hints: bool):
        self.claims = analyze_axis_info(fn, trust_hints)
        self.plans: dict[int, _AccessPlan] = {}
        self.checked: dict[int, int] = {}  # value (or mask) id -> times checked, over all launches
        self.finished: set[int] = set()  # accesses with nothing left to check, when sampling

    def plan(self, op: Operation) -> _AccessPlan:
        plan = self.plans.get(id(op))
        if plan is None:
            plan = self.plans[id(op)] = self._make_plan(op)
        return plan

    def _make_plan(self, op: Operation) -> _AccessPlan:
        """The pointer and mask operands and the integer values they are computed from (the
        nearest, up to a limit; not past loads and control flow), in the order they are computed,
        so that a false claim is reported where it starts."""
        roots = [op.operands[0]]
        mask = _mask_operand(op)
        if mask is not None:
            roots.append(mask)
        collected, frontier = {}, list(roots)
        while frontier and len(collected) < _SLICE_LIMIT:
            value = frontier.pop(0)
            if value.id in collected or not is_tracked(value.type):
                continue
            collected[value.id] = value
            frontier.extend(_sources(value))
        ordered, placed = [], set()

        def place(value: Value) -> None:
            if value.id in placed or value.id not in collected:
                return
            placed.add(value.id)
            for source in _sources(value):
                place(source)
            info = self.claims.get(value)
            if info is not None and (max(info.contiguity + info.divisibility + info.constancy) > 1
                                     or _sign_claimed(value, info)):
                ordered.append((value, info, any(value is root for root in roots)))

        for root in roots:
            place(root)
        box = classify_mask(mask, self.claims) if mask is not None else None
        return _AccessPlan(tuple(ordered), (mask, box) if box is not None else None)


def _sign_claimed(value: Value, info: AxisInfo) -> bool:
    """Whether ``info`` claims a signed integer non-negative (unsigned and i1 values are by type)."""
    scalar = value.type.scalar
    return info.nonnegative and scalar.is_int_signed() and not scalar.is_bool()


def _sources(value: Value) -> list[Value]:
    owner = value.owner
    if owner is None or owner.regions or owner.opcode in POINTER_READS:
        return []
    return owner.operands


_FUNCTIONS: dict[tuple[int, bool], _FunctionClaims] = {}


def _function_claims(fn: Function, trust_hints: bool) -> _FunctionClaims:
    """The analysis of ``fn`` (with or without what its hints promise), once per function object."""
    key = (id(fn), trust_hints)
    found = _FUNCTIONS.get(key)
    if found is None or found.claims.fn is not fn:
        found = _FUNCTIONS[key] = _FunctionClaims(fn, trust_hints)
        weakref.finalize(fn, _FUNCTIONS.pop, key, None)
    return found


def _mask_operand(op: Operation) -> Optional[Value]:
    slot = _MASK_SLOT.get(op.opcode)
    return op.operands[slot] if slot is not None and len(op.operands) > slot else None


def checked_tables(fn: Function, exec_table: dict, affine_table: dict, limit: int) -> tuple[dict, dict]:
    """Copies of the executor's handler tables whose accesses check the claims first."""
    checker = ClaimChecker(fn, limit)
    checked, affine = dict(exec_table), dict(affine_table)
    for opcode in _ACCESSES:
        if opcode in exec_table:
            checked[opcode] = checker.wrap(exec_table[opcode], symbolic=False)
        if opcode in affine_table:
            affine[opcode] = checker.wrap(affine_table[opcode], symbolic=True)
    return checked, affine


class ClaimChecker:
    """Checks one launch's accesses. Sampled (``limit`` > 0): a pointer or mask is checked the first
    ``limit`` times a function computes it (over all its launches), the values they are computed
    from the first few times, each in a few of the batch's active programs."""

    def __init__(self, fn: Function, limit: int):
        self.fn = fn
        self.limit = limit
        self.pending: Optional[Operation] = None  # checked by the affine handler, which declined

    def wrap(self, handler, symbolic: bool):
        def run(ex, op, args, active):
            if symbolic:
                self.check(ex, op, active)
                result = handler(ex, op, args, active)
                self.pending = op if result is NotImplemented else None
                return result
            if self.pending is op:
                self.pending = None  # the affine handler checked this execution already
            else:
                self.check(ex, op, active)
            return handler(ex, op, args, active)

        return run

    def _due(self, claims: _FunctionClaims, key: int, limit: int) -> bool:
        checked = claims.checked
        count = checked.get(key, 0)
        if self.limit and count >= limit:
            return False
        checked[key] = count + 1
        return True

    def check(self, ex, op: Operation, active) -> None:
        # a hint found false in this launch is the kernel's mistake (hint_check reports it where it
        # matters): the claims checked then are those that follow from the arithmetic alone
        claims = _function_claims(self.fn, trust_hints=not ex.false_hints)
        if self.limit and id(op) in claims.finished:
            return
        plan = claims.plan(op)
        rows = None if active is None else np.flatnonzero(active)
        if self.limit:
            rows = _sample(rows if rows is not None else np.arange(ex.batch))
        if rows is not None and len(rows) == 0:
            return
        due = False
        for value, info, operand in plan.values:
            # the access's own operands as often as allowed, what they are computed from less
            if self._due(claims, value.id, self.limit if operand else _SAMPLED_SOURCES):
                due = True
                data = _lookup(ex, value, rows)
                if data is not None:
                    _check_value(ex, op, value, info, data, rows)
        if plan.mask is not None and self._due(claims, -1 - id(op), self.limit):
            due = True
            _check_box(ex, op, plan.mask[0], plan.mask[1], rows)
        if not due:
            claims.finished.add(id(op))


def _sample(rows: np.ndarray) -> np.ndarray:
    """A few of ``rows``, spread over them (the first and the last included)."""
    if len(rows) <= _SAMPLED_PROGRAMS:
        return rows
    return rows[np.unique(np.linspace(0, len(rows) - 1, _SAMPLED_PROGRAMS).astype(np.int64))]


def _lookup(ex, value: Value, rows) -> Optional[np.ndarray]:
    """``value``'s data in the batch rows ``rows`` (None: all) as (programs, *dims) int64, scalars
    with one dimension of size 1; a value the same in every program keeps one row. None when the
    environment does not hold the value here."""
    try:
        data = ex.env[value.id]
    except KeyError:
        return None
    if type(data) is Affine:
        if rows is not None and data.base.shape[0] == ex.batch:
            data = Affine(data.base[rows], data.strides, data.shape, data.dtype)
        data = data.materialize()
    else:
        data = np.asarray(data)
        if rows is not None and data.shape[0] == ex.batch:
            data = data[rows]
    shape = T.shape_of(value.type)
    data = np.broadcast_to(data, (data.shape[0],) + shape).reshape((data.shape[0],) + dims_of(value.type))
    return data.astype(np.int64, copy=False)


def _lane(rows, lead: int, program: int) -> int:
    """The batch row of row ``program`` of data with ``lead`` rows looked up for ``rows``."""
    if lead == 1:
        return 0 if rows is None else int(rows[0])
    return program if rows is None else int(rows[program])


def _addresses(ex, data: np.ndarray) -> np.ndarray:
    """Tagged interpreter pointers as byte addresses (what divisibility is about)."""
    tags, offsets = Memory.decode(data)
    bases = np.array([0] + [a.address for a in ex.memory.allocations], dtype=np.int64)
    known = (tags >= 0) & (tags < bases.size)
    return np.where(known, bases[np.clip(tags, 0, bases.size - 1)], 0) + offsets


def _groups(data: np.ndarray, axis: int, run: int) -> np.ndarray:
    n = data.shape[axis]
    return data.reshape(data.shape[:axis] + (n // run, run) + data.shape[axis + 1:])


def _per_program(ok: np.ndarray) -> np.ndarray:
    return ok.reshape(ok.shape[0], -1).all(axis=1)


def _holds(claim: str, amount: int, data: np.ndarray, addresses: np.ndarray, axis: int, run: int,
           unit: int) -> np.ndarray:
    """Per program, whether ``claim`` (of ``amount``) holds along ``axis``."""
    if claim == "divisibility":
        # the first element of every claimed run (every element, for runs of 1)
        starts = addresses[(slice(None),) * axis + (slice(None, None, run),)]
        ok = (starts & (amount - 1)) == 0
    else:
        step = unit if claim == "contiguity" else 0
        ok = np.diff(_groups(data, axis, amount), axis=axis + 1) == step
    return _per_program(ok)


def _check_value(ex, op: Operation, value: Value, info: AxisInfo, data: np.ndarray, rows) -> None:
    claims = ("constancy",) if value.type.scalar.is_bool() else ("constancy", "contiguity", "divisibility")
    addresses = _addresses(ex, data) if value.type.scalar.is_ptr() else data
    unit = unit_of(value.type)
    for d in range(info.rank):
        for claim in claims:
            amount = getattr(info, claim)[d]
            if amount <= 1:
                continue
            ok = _holds(claim, amount, data, addresses, d + 1, info.contiguity[d], unit)
            if not ok.all():
                program = int(np.argmin(ok))
                shown = addresses if claim == "divisibility" else data
                _fail(ex, op, value, info, f"{claim}[{d}] = {amount}", shown[program],
                      _lane(rows, data.shape[0], program))
    if _sign_claimed(value, info):
        ok = _per_program(data >= 0)
        if not ok.all():
            program = int(np.argmin(ok))
            _fail(ex, op, value, info, "nonnegative", data[program], _lane(rows, data.shape[0], program))


def _check_box(ex, op: Operation, mask: Value, box: MaskInfo, rows) -> None:
    """The mask is the box its bounds describe: along each bounded dimension a prefix (or suffix)
    as long as the bound leaves room for from the index's first element."""
    actual = _lookup(ex, mask, rows)
    if actual is None:
        return
    dims = dims_of(mask.type)
    expected = np.ones((1,) + dims, dtype=bool)
    for bound in box.bounds:
        index, limit = _lookup(ex, bound.index, rows), _lookup(ex, bound.bound, rows)
        if index is None or limit is None:
            return
        lanes = index.reshape(index.shape[0], -1)[:, :1]
        shape = [1] * (len(dims) + 1)
        if bound.dim is not None:
            lanes = lanes + np.arange(dims[bound.dim], dtype=np.int64) * unit_of(bound.index.type)
            shape[bound.dim + 1] = dims[bound.dim]
        limit = limit.reshape(limit.shape[0], -1)[:, :1]
        kind = bound.index.type.scalar
        if kind.is_int() and kind.is_int_unsigned():  # (int64 data: a uint64 past 2**63 reads negative)
            lanes, limit = lanes.astype(np.uint64), limit.astype(np.uint64)
        if bound.side == "upper":
            passes = lanes <= limit if bound.inclusive else lanes < limit
        else:
            passes = lanes >= limit if bound.inclusive else lanes > limit
        shape[0] = passes.shape[0]
        expected = expected & passes.reshape(shape)
    lead = max(actual.shape[0], expected.shape[0])
    actual = np.broadcast_to(actual != 0, (lead,) + dims)
    ok = _per_program(actual == np.broadcast_to(expected, (lead,) + dims))
    if not ok.all():
        program = int(np.argmin(ok))
        _fail(ex, op, mask, None, str(box), actual[program].astype(np.int64), _lane(rows, lead, program))


def _describe(fn: Function, value: Value) -> str:
    owner = value.owner
    if owner is not None:
        where = f" at {os.path.basename(owner.loc.file)}:{owner.loc.line}" if owner.loc else ""
        return f"the {owner.opcode}{where}"
    for i, arg in enumerate(fn.args):
        if arg is value:
            return f"argument {fn.arg_names[i] if i < len(fn.arg_names) else i}"
    return "a loop variable or loop-carried value"


def _fail(ex, op: Operation, value: Value, info: Optional[AxisInfo], claim: str, actual: np.ndarray, lane: int):
    shown = np.array2string(np.asarray(actual), threshold=40, max_line_width=120)
    claims = f" (all claims: {info})" if info is not None else ""
    message = render_location(
        op.loc, f"internal error: the compiler's analysis claims {claim} for {_describe(ex.fn, value)} (of type "
        f"{getattr(value.type, 'ir_name', value.type)}) feeding this {op.opcode} in kernel '{ex.fn.name}'{claims}, "
        f"but program {ex.program_of_lane(lane)} computed {shown}",
        "this is a bug in tritium's compile-time analysis (compiler/analysis), not in the kernel, unless the "
        "kernel's signed 32- or 64-bit arithmetic overflows, which the analysis assumes it does not "
        "(TRITIUM_DEBUG=1 reports int32 overflow); please report it")
    raise AnalysisClaimError(message)
