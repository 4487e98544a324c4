"""The interpreter's ops that report on a kernel: ``print``, ``device_assert`` and the checks of hints
and assumptions.

A hint (``tl.multiple_of``, ``tl.max_contiguous``, ``tl.max_constancy``) is checked against the
values the kernel computed; so is ``tl.assume``'s condition. Registered in the executor's table by
``handles``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...errors import DeviceAssertionError, HintViolationError, render_location
from ..print_format import format_print_lines
from .executor import _expand_programs, _full, handles
from .memory import Memory


# debugging -------------------------------------------------------------------------------------------------
@handles("print")
def exec_print(ex, op, args, active):
    """Prints as compiled Triton does, one line per element (and operand):
    ``pid (x, y, z) idx (i, j) prefix value``; ``idx ()`` for scalars; ``(operand n)`` when there
    are several values; floats as C's %f; hex as 0x with the type's width in digits."""
    programs = range(ex.batch) if active is None else np.flatnonzero(active)
    for p in programs:
        values = [np.asarray(_full(arg, value.type, ex.batch))[int(p)] for value, arg in zip(op.operands, args)]
        for line in format_print_lines(op, ex.program_of_lane(int(p)), values):
            print(line)
    return []


@handles("assert")
def exec_assert(ex, op, args, active):
    if op.attrs.get("debug_only") and ex.checks is None:
        return []
    cond = np.asarray(_full(args[0], op.operands[0].type, ex.batch))
    failed = ~cond
    if active is not None:
        failed &= _expand_programs(active, cond.ndim - 1)
    if failed.any():
        first = np.unravel_index(int(np.flatnonzero(failed.reshape(-1))[0]), failed.shape)
        pid = ex.program_of_lane(int(first[0]))
        lane = tuple(int(i) for i in first[1:])
        where = f", lane {lane[0] if len(lane) == 1 else lane}" if lane else ""
        message = render_location(op.loc, f"device_assert failed in kernel '{ex.fn.name}', program {pid}{where}: "
                                  f"{op.attrs['message']}")
        raise DeviceAssertionError(message, loc=op.loc, program_id=pid)
    return []


_WARNED_ASSUMPTIONS: set = set()  # (file, line, col) of assumptions already warned about in this process


@handles("assume")
def exec_assume(ex, op, args, active):
    """A false ``tl.assume``: a compiled GPU kernel may have been built on it (the axis analysis takes
    ``x >= 0`` as a fact about x), so its results are undefined there. A warning, once per assumption
    (a HintViolationError in debug mode); the claims the launch's accesses are checked against then
    stop trusting hints and assumptions (``analysis_check``)."""
    cond = np.asarray(_full(args[0], op.operands[0].type, ex.batch))
    failed = ~cond
    if active is not None:
        failed &= _expand_programs(active, cond.ndim - 1)
    if not failed.any():
        return []
    ex.false_hints[id(op)] = op
    first = np.unravel_index(int(np.flatnonzero(failed.reshape(-1))[0]), failed.shape)
    lane = tuple(int(i) for i in first[1:])
    where = f", lane {lane[0] if len(lane) == 1 else lane}" if lane else ""
    message = render_location(
        op.loc, f"tl.assume is false in kernel '{ex.fn.name}', program {ex.program_of_lane(int(first[0]))}{where}",
        "a compiled GPU kernel may rely on the assumption (its results are then undefined); fix the condition "
        "or remove the assumption")
    if ex.checks is not None:
        raise HintViolationError(message)
    key = (op.loc.file, op.loc.line, op.loc.col) if op.loc is not None else (ex.fn.name, id(op))
    if key not in _WARNED_ASSUMPTIONS:
        _WARNED_ASSUMPTIONS.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return []


def _run_length(data: np.ndarray, axis: int, step: int) -> int:
    """The largest power of two ``c`` such that along ``axis`` the values form aligned runs of ``c``
    whose consecutive elements differ by ``step`` (1 for contiguity, 0 for constancy)."""
    n = data.shape[axis]
    if n < 2:
        return 1
    steps = np.diff(data, axis=axis) == step
    within = np.arange(1, n)  # the step into position i; it crosses a run boundary when i % c == 0
    c = n
    while c > 1:
        if np.all(np.compress(within % c != 0, steps, axis=axis)):
            return c
        c //= 2
    return 1


@handles("hint")
def exec_hint(ex, op, args, active):
    x = args[0]
    kind = op.attrs["kind"]
    values = op.attrs["values"]
    ty = op.operands[0].type
    data = np.asarray(_full(x, ty, ex.batch if x.shape[0] != 1 else 1))
    unit = 1
    if ty.scalar.is_ptr():
        # pointers: divisibility is of the address in bytes, contiguity in elements
        tags, offsets = Memory.decode(data.astype(np.int64))
        bases = np.array([0] + [a.address for a in ex.memory.allocations], dtype=np.int64)
        known = (tags >= 0) & (tags < bases.size)
        data = np.where(known, bases[np.clip(tags, 0, bases.size - 1)], 0) + offsets
        element = ty.scalar.element_ty
        unit = 8 if element.is_ptr() else element.itemsize
    if active is not None and data.shape[0] == ex.batch:
        data = data[active]
    if data.size == 0:
        return x
    data = data.astype(np.int64)
    rank = data.ndim - 1  # axis 0 is the program
    ok = True
    if kind == "multiple_of":
        # Triton's meaning: along each dimension, the first element of every contiguous group is a
        # multiple of the value (every element, where the values are not contiguous)
        per_dim = values if len(values) == rank else values[-1:] * max(1, rank)
        if rank == 0:
            ok = bool(np.all(data % per_dim[0] == 0))
        for axis, v in enumerate(per_dim[:rank], start=1):
            run = _run_length(data, axis, unit)
            starts = data if run == 1 else np.take(data, np.arange(0, data.shape[axis], run), axis=axis)
            ok = ok and bool(np.all(starts % v == 0))
    elif rank > 0:
        step = unit if kind == "max_contiguous" else 0
        per_dim = values if len(values) == rank else (None,) * (rank - 1) + (values[-1],)
        for axis, v in enumerate(per_dim, start=1):
            n = data.shape[axis]
            if v is None or v <= 1 or n % v:
                continue
            groups = data.reshape(data.shape[:axis] + (n // v, v) + data.shape[axis + 1:])
            ok = ok and bool(np.all(np.diff(groups, axis=axis + 1) == step))
    if not ok:
        # reported only where it matters: at the accesses whose addresses rely on it (hint_check)
        ex.false_hints[id(op)] = op
    return x
