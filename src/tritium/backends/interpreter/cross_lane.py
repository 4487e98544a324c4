"""The interpreter's cross-lane ops: reductions, scans, dot, sort, gather and histogram.

Each result lane reads other lanes of its block; a reduction or scan either has a builtin kind or
runs its combine region. Registered in the executor's table by ``handles``.
"""
from __future__ import annotations

import numpy as np

from ...errors import render_location
from ...numerics import arithmetic as numerics
from ...numerics import elementwise
from .executor import _expand_programs, _full, _same_batch, handles


# reductions and scans ----------------------------------------------------------------------------------
def _combine_with_region(ex, region):
    def combine(left, right):
        # The region runs in a copy, and the enclosing region's own dict comes back: it is still
        # being filled by the region that holds this op.
        saved = ex.env
        ex.env = saved.copy()
        try:
            outputs = ex.run_region(region, None, list(left) + list(right))
        finally:
            ex.env = saved
        return [np.asarray(o) for o in outputs]

    return combine


def _one_lead(values: list) -> list:
    """Operands of a multi-operand reduce or scan with one leading (program) dimension: an operand
    the same in every program (lead 1) is stretched to the batch the others have."""
    lead = max(v.shape[0] for v in values)
    return [v if v.shape[0] == lead else np.broadcast_to(v, (lead,) + v.shape[1:]) for v in values]


@handles("reduce")
def exec_reduce(ex, op, args, active):
    axis = op.attrs["axis"] + 1
    kind = op.attrs["kind"]
    values = [np.asarray(_full(a, t.type)) for a, t in zip(args, op.operands)]
    x = values[0]
    if kind == "sum":
        return numerics.sum_tree(x, axis)
    if kind in ("max", "min"):  # NaN-ignoring and -0 < +0, as minimum/maximum with propagate_nan=none
        return elementwise.reduce_extremum(x, axis, kind == "max", op.operands[0].type.scalar.is_floating())
    if kind == "xor":
        return np.bitwise_xor.reduce(x, axis=axis)
    if kind in ("argmax", "argmin"):
        fn = np.argmax if kind == "argmax" else np.argmin
        return fn(x, axis=axis).astype(np.int32)
    if kind == "custom":
        # Region arguments are scalars; give them the full leading shape of the halves.
        return numerics.tree_reduce(_one_lead(values), axis, _combine_with_region(ex, op.regions[0]))
    raise NotImplementedError(f"reduce kind {kind}")


@handles("scan")
def exec_scan(ex, op, args, active):
    axis = op.attrs["axis"] + 1
    kind = op.attrs["kind"]
    reverse = op.attrs["reverse"]
    values = [np.asarray(_full(a, t.type)) for a, t in zip(args, op.operands)]
    if reverse:
        values = [np.flip(v, axis) for v in values]
    if kind == "sum":
        outputs = [np.cumsum(values[0], axis=axis, dtype=values[0].dtype)]
    elif kind == "prod":
        outputs = [np.cumprod(values[0], axis=axis, dtype=values[0].dtype)]
    else:
        combine = _combine_with_region(ex, op.regions[0])
        values = _one_lead(values)
        n = values[0].shape[axis]
        carry = [np.take(v, [0], axis=axis) for v in values]
        pieces = [[c] for c in carry]
        for i in range(1, n):
            carry = combine(carry, [np.take(v, [i], axis=axis) for v in values])
            carry = [np.broadcast_to(c, pieces[j][0].shape) for j, c in enumerate(carry)]
            for j, c in enumerate(carry):
                pieces[j].append(c)
        outputs = [np.concatenate(p, axis=axis).astype(v.dtype) for p, v in zip(pieces, values)]
    if reverse:
        outputs = [np.flip(o, axis) for o in outputs]
    return outputs


@handles("dot")
def exec_dot(ex, op, args, active):
    a, b, acc = (np.asarray(_full(x, v.type)) for x, v in zip(args, op.operands))
    return numerics.dot(a, b, acc, op.attrs["input_precision"], op.result.type.scalar.numpy)


# sorting, gathering, counting -----------------------------------------------------------------------
@handles("sort")
def exec_sort(ex, op, args, active):
    return numerics.bitonic_sort(np.asarray(_full(args[0], op.operands[0].type)), op.attrs["descending"])


@handles("gather")
def exec_gather(ex, op, args, active):
    from ...errors import OutOfBoundsError

    src, index = _same_batch(args, op.operands)
    axis = op.attrs["axis"] + 1
    extent = src.shape[axis]
    outside = (index < 0) | (index >= extent)
    bad = outside
    if active is not None and bad.shape[0] == ex.batch:
        bad = bad & _expand_programs(active, bad.ndim - 1)  # programs that skip this op are not checked
    if bad.any():
        first = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), bad.shape)
        pid = ex.program_of_lane(int(first[0])) if bad.shape[0] == ex.batch else ex.program_of_lane(0)
        value = int(index[first])
        lane = tuple(int(i) for i in first[1:])
        message = render_location(
            op.loc, f"tl.gather in kernel '{ex.fn.name}', program {pid}, lane {lane}: index {value} is out of range "
            f"for axis {op.attrs['axis']} of size {extent}; {int(bad.sum())} indices are out of range",
            "clamp the index (tl.minimum/tl.maximum) or build it so that it stays within the source block")
        raise OutOfBoundsError(message, kernel=ex.fn.name, loc=op.loc, program_id=pid, offset=value, extent=extent,
                               tensor="src", access="gather")
    return np.take_along_axis(src, np.where(outside, 0, index).astype(np.intp), axis=axis)


@handles("histogram")
def exec_histogram(ex, op, args, active):
    bins = op.attrs["num_bins"]
    values = _same_batch(args, op.operands)
    x = values[0]
    keep = np.ones(x.shape, dtype=bool) if op.operand("mask") is None else np.asarray(values[op.operand_index("mask")])
    if active is not None and x.shape[0] == ex.batch:
        keep = keep & _expand_programs(active, 1)
    outside = keep & ((x < 0) | (x >= bins))
    if outside.any():
        from ...errors import OutOfBoundsError

        program, lane = (int(i) for i in np.argwhere(outside)[0])
        pid = ex.program_of_lane(program)
        value = int(x[program, lane])
        message = render_location(
            op.loc, f"tl.histogram in kernel '{ex.fn.name}', program {pid}, lane {lane}: value {value} is outside the "
            f"{bins} bins [0, {bins}); {int(outside.sum())} values are outside",
            f"pass mask= to leave such lanes out. A GPU counts them in bin value & {bins - 1} ({value & (bins - 1)} "
            "here) and Triton's interpreter drops them, so the result depends on where the kernel runs")
        raise OutOfBoundsError(message, kernel=ex.fn.name, loc=op.loc, program_id=pid, offset=value, extent=bins,
                               tensor="input", access="histogram")
    rows = np.broadcast_to(np.arange(x.shape[0]).reshape(-1, 1), x.shape)
    flat = rows[keep].astype(np.int64) * bins + x[keep].astype(np.int64)
    return np.bincount(flat, minlength=x.shape[0] * bins).reshape(x.shape[0], bins).astype(np.int32)
