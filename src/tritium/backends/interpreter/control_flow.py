"""The interpreter's structured control flow: ``if``, ``for`` and ``while``, predicated or compacted.

Where programs of a batch disagree, an ``if`` runs both regions, each masked to its programs, and
merges the results; a loop runs until every program is done, either masking finished programs
(predication) or gathering the programs still running into a smaller batch (compaction, see
``Executor.compacted``). Registered in the executor's table by ``handles``.
"""
from __future__ import annotations

import numpy as np

from ...compiler.ir import types as T
from ...errors import render_location
from . import checks
from .executor import _concrete, _expand_programs, _full, _select_programs, handles


# control flow -------------------------------------------------------------------------------------------
def _merge(cond, then_values, else_values, results):
    merged = []
    for t, e, r in zip(then_values, else_values, results):
        c = _expand_programs(cond, len(T.shape_of(r.type)))
        merged.append(np.where(c, _concrete(t), _concrete(e)))
    return merged


def _restricted(active, cond):
    return cond if active is None else (active & cond)


@handles("if")
def exec_if(ex, op, args, active):
    cond = args[0]
    then_region, else_region = op.regions
    if cond.shape[0] == 1:
        return ex.run_region(then_region if bool(cond[0]) else else_region, active)
    cond = np.broadcast_to(cond, (ex.batch,))
    then_active = _restricted(active, cond)
    else_active = _restricted(active, ~cond)
    if not then_active.any():
        return ex.run_region(else_region, active)
    if not else_active.any():
        return ex.run_region(then_region, active)
    then_values = ex.run_region(then_region, then_active)
    else_values = ex.run_region(else_region, else_active)
    return _merge(cond, then_values, else_values, op.results)


@handles("for")
def exec_for(ex, op, args, active):
    lb, ub, step, *carried = args
    body = op.regions[0]
    index_dtype = op.operands[0].type.numpy
    if lb.shape[0] == 1 and ub.shape[0] == 1 and step.shape[0] == 1:
        lo, hi, st = int(lb[0]), int(ub[0]), int(step[0])
        if st == 0:
            raise ZeroDivisionError(render_location(op.loc, "range() step is zero at run time"))
        for i in range(lo, hi, st):
            carried = ex.run_region(body, active, [np.array([i], dtype=index_dtype)] + list(carried))
        return carried
    lb, ub, step = (np.broadcast_to(v, (ex.batch,)).astype(np.int64) for v in (lb, ub, step))
    safe_step = np.where(step == 0, 1, step)
    trips = np.maximum(0, -(-(ub - lb) // safe_step))
    trips = np.where(step == 0, 0, trips)
    live = trips if active is None else np.where(active, trips, 0)
    if ex.can_compact():
        return _for_compacted(ex, body, op.results, lb, step, live, index_dtype, carried)
    for t in range(int(live.max(initial=0))):
        running = live > t
        iv = (lb + t * step).astype(index_dtype)
        new = ex.run_region(body, running, [iv] + list(carried))
        carried = _merge(running, new, carried, op.results)
    return carried


def _for_compacted(ex, body, results, lb, step, live, index_dtype, carried):
    """A loop whose trip count differs between programs, each iteration run by only the programs
    still in it: when some finish, the others are gathered into a smaller batch (see
    ``Executor.compacted``), so finished programs cost nothing (causal attention's inner loop runs
    about half the iterations it would with predication alone)."""
    final = [np.array(_full(_concrete(c), r.type, ex.batch)) for c, r in zip(carried, results)]
    members = np.arange(ex.batch)  # the programs (of the enclosing batch) still in the loop
    current = list(carried)  # their carried values, with a leading axis of len(members) or 1
    for t in range(int(live.max(initial=0))):
        keep = np.flatnonzero(live[members] > t)
        if len(keep) < len(members):
            for out, value, r in zip(final, current, results):
                out[members] = _full(_concrete(value), r.type, len(members))
            current = [_select_programs(c, keep) for c in current]
            members = members[keep]
        iv = (lb[members] + t * step[members]).astype(index_dtype)
        current = _run_on(ex, members, body, [iv] + current)
    for out, value, r in zip(final, current, results):
        out[members] = _full(_concrete(value), r.type, len(members))
    return final


class _SpinCheck:
    """Counts a ``while`` loop's iterations; past ``ex.spin_check_after`` a ``checks.SpinWatch``
    sees each one and raises DeadlockError when an iteration repeats the one before."""

    def __init__(self, ex, op):
        self.ex, self.op = ex, op
        self.iterations = 0
        self.spin_watch = None

    def due(self) -> bool:
        """Starts an iteration; True when the watch is to see it."""
        self.iterations += 1
        return self.iterations > self.ex.spin_check_after

    def watch(self, running, carried) -> None:
        if self.spin_watch is None:
            self.spin_watch = checks.SpinWatch(self.ex, self.op)
        self.spin_watch.next_iteration(running, carried)

    def close(self) -> None:
        if self.spin_watch is not None:
            self.spin_watch.close()


def _run_on(ex, members: np.ndarray, region, args) -> list:
    """``region`` run by the programs ``members`` of the batch alone (compacted unless that is all)."""
    if len(members) == ex.batch:
        return ex.run_region(region, None, args)
    with ex.compacted(members):
        return ex.run_region(region, None, args)


def _while_compacted(ex, op, carried, active):
    """A ``while`` loop run by only the programs still in it: a program whose condition fails
    leaves the batch, and the others carry on in a smaller one (as ``_for_compacted`` does). A
    spin watch, when one starts, sees the programs still running as a mask over the batch."""
    before, after = op.regions
    batch = ex.batch
    members = np.arange(batch) if active is None else np.flatnonzero(active)
    if active is not None:
        carried = [_select_programs(c, members) for c in carried]
    final = None  # the results for the whole batch, made when the first program leaves
    spin = _SpinCheck(ex, op)
    try:
        while True:
            if spin.due():
                running = None
                if len(members) != batch:
                    running = np.zeros(batch, dtype=bool)
                    running[members] = True
                spin.watch(running, carried)
            cond, *forwarded = _run_on(ex, members, before, carried)
            if cond.shape[0] == 1 and bool(cond[0]):
                carried = _run_on(ex, members, after, forwarded)
                continue
            if cond.shape[0] == 1 and final is None and len(members) == batch:
                return forwarded  # the whole batch leaves together: its values stay as they are
            cond = np.broadcast_to(cond, (len(members),))
            leaving = np.flatnonzero(~cond)
            if len(leaving):
                if final is None:
                    final = [np.zeros((batch,) + T.shape_of(r.type), dtype=np.asarray(_concrete(v)).dtype)
                             for v, r in zip(forwarded, op.results)]
                for out, value, r in zip(final, forwarded, op.results):
                    out[members[leaving]] = _select_programs(_full(_concrete(value), r.type, len(members)), leaving)
            keep = np.flatnonzero(cond)
            if len(keep) == 0:
                return final
            if len(keep) < len(members):
                forwarded = [_select_programs(v, keep) for v in forwarded]
                members = members[keep]
            carried = _run_on(ex, members, after, forwarded)
    finally:
        spin.close()


@handles("while")
def exec_while(ex, op, args, active):
    if ex.can_compact():
        return _while_compacted(ex, op, list(args), active)
    before, after = op.regions
    carried = list(args)
    running = active
    results = None
    spin = _SpinCheck(ex, op)
    try:
        while True:
            if spin.due():
                spin.watch(running, carried)
            cond, *forwarded = ex.run_region(before, running, carried)
            if cond.shape[0] == 1 and (running is None):
                if not bool(cond[0]):
                    return forwarded
                carried = ex.run_region(after, running, forwarded)
                continue
            cond = np.broadcast_to(cond, (ex.batch,))
            still = _restricted(running, cond)
            stopping = ~cond if running is None else (running & ~cond)
            results = forwarded if results is None else _merge(stopping, forwarded, results, op.results)
            if not still.any():
                return results
            new = ex.run_region(after, still, forwarded)
            carried = _merge(still, new, forwarded, op.results)
            running = still
    finally:
        spin.close()
