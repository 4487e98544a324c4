"""False hints reported where they can change a result: at the accesses whose addresses rely on them.

``tl.multiple_of`` / ``tl.max_contiguous`` / ``tl.max_constancy`` are promises a GPU compiler turns
into vector loads and stores: it reads a run of lanes from the run's first address and assumes the
rest follow. A false promise is therefore harmless unless it reaches the address of an access and
the lanes it misplaces are used. The rule (docs/language.md, "Hints"):

* ``exec_hint`` evaluates each promise and records the false ones for the launch; nothing stops.
* An access (load, store, atomic) whose pointer's claims differ with and without hints *relies on*
  them. When some hint of the launch was false, such an access checks its pointer's hinted claims
  on its active lanes (the program runs and the mask holds): along each dimension claimed
  contiguous, every active lane of a run must sit where the run's first address puts it, and a run
  with an active lane must start at the claimed alignment.
* A store or atomic with such lanes would write them to wrong addresses on a GPU: a
  ``HintViolationError`` in debug mode, otherwise a warning. A load with such lanes would read them
  from addresses the kernel did not ask for, which changes a result only where those lanes reach
  memory (Triton's matmul hints ``rm % M`` contiguous and masks the wrapped rows at the store): a
  warning in both modes. Warnings come once per access, naming it, the hints and a program; the
  kernel runs on unchanged (the interpreter computes every lane from its own address).

The compiled CPU backend plans its accesses from the analysis without hints, so a false hint cannot
change its results either.
"""
from __future__ import annotations

import os
import warnings
import weakref
from typing import Optional

import numpy as np

from ...compiler.analysis.axis_info import AxisInfo, analyze_axis_info, dims_of, unit_of
from ...compiler.ir.ops import Function, Operation, Value
from ...errors import HintViolationError, render_location
from .analysis_check import _ACCESSES, _addresses, _lookup, _mask_operand

_WARNED: set[tuple] = set()  # (file, line, col) of accesses already warned about in this process


class _Reliance:
    """Per function: the accesses whose pointer claims rely on hints, with those claims and the
    hint ops the pointer is computed from."""

    def __init__(self, fn: Function):
        self.accesses: dict[int, tuple[AxisInfo, tuple[Operation, ...]]] = {}
        if not _has_hints(fn):
            return
        hinted, plain = analyze_axis_info(fn), analyze_axis_info(fn, trust_hints=False)
        for op in fn.walk():
            if op.opcode not in _ACCESSES:
                continue
            pointer = op.operands[0]
            claims = hinted.get(pointer)
            if claims is None or claims == plain.get(pointer):
                continue
            self.accesses[id(op)] = (claims, _hints_feeding(pointer))


def _has_hints(fn: Function) -> bool:
    return any(op.opcode == "hint" for op in fn.walk())


def _hints_feeding(value: Value) -> tuple[Operation, ...]:
    """The hint ops ``value`` is computed from (not looking past loads and control flow)."""
    found, seen, frontier = [], set(), [value]
    while frontier:
        v = frontier.pop()
        owner = v.owner
        if owner is None or id(owner) in seen or owner.regions or owner.opcode in _ACCESSES:
            continue
        seen.add(id(owner))
        if owner.opcode == "hint":
            found.append(owner)
        frontier.extend(owner.operands)
    return tuple(found)


_FUNCTIONS: dict[int, _Reliance] = {}


def _reliance(fn: Function) -> _Reliance:
    found = _FUNCTIONS.get(id(fn))
    if found is None:
        found = _FUNCTIONS[id(fn)] = _Reliance(fn)
        weakref.finalize(fn, _FUNCTIONS.pop, id(fn), None)
    return found


def checked_tables(fn: Function, exec_table: dict, affine_table: dict) -> tuple[dict, dict]:
    """The handler tables, with the accesses that rely on hints wrapped in the check (the tables
    themselves when no access does)."""
    reliance = _reliance(fn)
    if not reliance.accesses:
        return exec_table, affine_table
    checked, affine = dict(exec_table), dict(affine_table)
    pending: list[Optional[Operation]] = [None]  # an access the affine handler checked, then declined

    def wrap(handler, symbolic: bool):
        def run(ex, op, args, active):
            if pending[0] is op:
                pending[0] = None
            elif ex.false_hints and id(op) in reliance.accesses:
                _check(ex, op, active, *reliance.accesses[id(op)])
            result = handler(ex, op, args, active)
            if symbolic and result is NotImplemented:
                pending[0] = op
            return result
        return run

    for opcode in _ACCESSES:
        if opcode in exec_table:
            checked[opcode] = wrap(exec_table[opcode], symbolic=False)
        if opcode in affine_table:
            affine[opcode] = wrap(affine_table[opcode], symbolic=True)
    return checked, affine


def _check(ex, op: Operation, active, claims: AxisInfo, hints: tuple[Operation, ...]) -> None:
    false = [h for h in hints if id(h) in ex.false_hints]
    if hints and not false:
        return  # the hints this pointer is computed from held
    rows = None if active is None else np.flatnonzero(active)
    if rows is not None and len(rows) == 0:
        return
    pointer = _lookup(ex, op.operands[0], rows)
    if pointer is None:
        return
    mask_value = _mask_operand(op)
    used = np.ones(pointer.shape, dtype=bool)
    if mask_value is not None:
        mask = _lookup(ex, mask_value, rows)
        if mask is None:
            return
        used = np.broadcast_to(mask != 0, np.broadcast_shapes(mask.shape, pointer.shape))
        pointer = np.broadcast_to(pointer, used.shape)
    addresses = _addresses(ex, pointer)
    unit = unit_of(op.operands[0].type)
    for d in range(claims.rank):
        run = claims.contiguity[d]
        if run <= 1 or dims_of(op.operands[0].type)[d] % run:
            continue
        axis = d + 1
        n = addresses.shape[axis]
        shape = addresses.shape[:axis] + (n // run, run) + addresses.shape[axis + 1:]
        runs = addresses.reshape(shape)
        lanes_used = used.reshape(shape)
        starts = np.take(runs, [0], axis=axis + 1)
        step = (np.arange(run, dtype=np.int64) * unit).reshape((1,) * (axis + 1) + (run,) + (1,) * (runs.ndim - axis - 2))
        misplaced = (runs != starts + step) & lanes_used
        alignment = claims.divisibility[d]
        if alignment > 1:
            misaligned = ((starts & (alignment - 1)) != 0) & lanes_used.any(axis=axis + 1, keepdims=True)
            misplaced = misplaced | misaligned
        if misplaced.any():
            program = int(np.argwhere(misplaced)[0][0])
            _report(ex, op, false, d, run, alignment,
                    _row(rows, pointer.shape[0], program))


def _row(rows, lead: int, program: int) -> int:
    if lead == 1:
        return 0 if rows is None else int(rows[0])
    return program if rows is None else int(rows[program])


def _describe(hints: list) -> str:
    """``tl.multiple_of([16]) and tl.max_contiguous([16]) at k.py:8``, one entry per line."""
    by_line: dict[tuple, list[str]] = {}
    for hint in hints:
        where = f" at {os.path.basename(hint.loc.file)}:{hint.loc.line}" if hint.loc else ""
        text = f"tl.{hint.attrs['kind']}({list(hint.attrs['values'])})"
        if text not in by_line.setdefault((where,), []):
            by_line[(where,)].append(text)
    return ", ".join(" and ".join(texts) + where for (where,), texts in by_line.items()) or "a hint"


def _report(ex, op: Operation, hints: list, dim: int, run: int, alignment: int, lane_program: int) -> None:
    program = ex.program_of_lane(lane_program)
    # a pointer carried through a loop is not traced back to its hints: name the launch's false ones
    relied = (f"relies on {_describe(hints)}" if hints else
              f"relies on hints, and {_describe(list(ex.false_hints.values()))} turned out false")
    writes = op.opcode != "load"
    consequence = ("would write these lanes to the wrong addresses there" if writes else
                   "would read these lanes from addresses the kernel did not ask for (perhaps outside the "
                   "tensor), which matters where they reach memory")
    message = render_location(
        op.loc, f"this {op.opcode} {relied}; here program {program} has "
        f"active lanes that are not where runs of {run} consecutive elements (aligned to {alignment} bytes) "
        f"along dimension {dim} put them",
        f"a compiled GPU kernel accesses a run from its first address, so it {consequence}; fix the hint or "
        "mask those lanes off (the interpreter computes every lane from its own address)")
    if writes and ex.checks is not None:
        raise HintViolationError(message)
    key = (op.loc.file, op.loc.line, op.loc.col) if op.loc is not None else (ex.fn.name, id(op))
    if key not in _WARNED:
        _WARNED.add(key)
        if op.loc is not None:
            warnings.warn_explicit(message, RuntimeWarning, op.loc.file, op.loc.line)
        else:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
