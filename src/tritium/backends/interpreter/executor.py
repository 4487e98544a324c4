"""Executes tile IR with numpy over a batch of programs at once.

Every value is an array whose first axis is the program axis (length B, or 1 when the value is
the same in every program), followed by the block's axes; a block axis may have length 1 where
the value is broadcast along it (splats and constants stay small). Control flow that differs
between programs runs predicated: both sides of an ``if``, loops until every program is done,
with loads, stores, prints and asserts masked by the programs still active.

``exec_<opcode>(executor, op, args, active)`` implements each opcode; ``active`` is None when
every program of the batch is active, else a boolean array of length B.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ... import config
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Region
from ...errors import DeviceAssertionError, HintViolationError, render_location
from . import checks, numerics
from .affine import AFFINE_HANDLERS, Affine, make_arange, make_splat
from .memory import Memory


def _full(x: np.ndarray, ty, batch: int | None = None) -> np.ndarray:
    """``x`` broadcast to its complete block shape (a view; nothing is copied)."""
    lead = x.shape[0] if batch is None else batch
    return np.broadcast_to(x, (lead,) + T.shape_of(ty))


def _concrete(x):
    """An ordinary array for ``x`` (materialising an Affine)."""
    return x.materialize() if type(x) is Affine else x


def _expand_programs(mask: np.ndarray, rank: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * rank)


def _select_programs(x, members: np.ndarray):
    """``x`` for the programs ``members`` alone (values the same in every program stay as they are)."""
    if type(x) is Affine:
        if x.base.shape[0] == 1:
            return x
        return Affine(x.base[members], x.strides, x.shape, x.dtype)
    if np.ndim(x) == 0 or x.shape[0] == 1:
        return x
    return x[members]


class _ProgramSubset(dict):
    """The environment of a region run on some of the batch's programs: a value from outside is
    gathered for those programs the first time the region uses it."""

    def __init__(self, outer: dict, members: np.ndarray):
        super().__init__()
        self.outer, self.members = outer, members

    def __missing__(self, key):
        value = _select_programs(self.outer[key], self.members)
        self[key] = value
        return value

    def copy(self) -> "_ProgramSubset":
        clone = _ProgramSubset(self.outer, self.members)
        clone.update(self)
        return clone


class Executor:
    def __init__(self, fn: Function, memory: Memory, grid: tuple[int, int, int]):
        self.fn = fn
        self.memory = memory
        self.grid = grid
        self.env: dict[int, np.ndarray] = {}
        self.pids: np.ndarray = np.zeros((1, 3), dtype=np.int32)
        self.batch = 1
        self.handlers, self.affine_handlers = _EXEC, AFFINE_HANDLERS
        self.checks = None  # debug mode's checks.DebugChecks, or None
        self.spin_check_after = config.spin_check_after()  # while iterations before SpinWatch starts
        self.watches: list = []  # the SpinWatches of the while loops running now
        self._unwatched = None
        self.program_order = False
        self.shuffled = False
        self.progress = (0, 1)  # (programs finished, programs in the launch)

    def enable_debug(self, program_order: bool) -> None:
        """Debug mode: checked handlers, race tracking, while loops watched from their first iteration."""
        self.handlers, self.affine_handlers = checks.debug_tables(self.handlers, self.affine_handlers)
        self.checks = checks.DebugChecks(self.fn.name, self.grid, self.memory, program_order)
        self.spin_check_after = 0

    def push_watch(self, watch) -> None:
        if not self.watches:
            self._unwatched = (self.handlers, self.affine_handlers)
            self.handlers, self.affine_handlers = checks.watched_tables(self.handlers, self.affine_handlers)
        self.watches.append(watch)

    def pop_watch(self, watch) -> None:
        self.watches.remove(watch)
        if not self.watches:
            self.handlers, self.affine_handlers = self._unwatched

    # programs --------------------------------------------------------------------------------
    def program_of_lane(self, lane_program: int) -> tuple[int, int, int]:
        row = self.pids[min(lane_program, len(self.pids) - 1)]
        return (int(row[0]), int(row[1]), int(row[2]))

    def run_batch(self, pids: np.ndarray, args: list[np.ndarray]) -> None:
        self.pids = pids
        self.batch = len(pids)
        self.env = {}
        if self.checks is not None:
            gx, gy, _ = self.grid
            self.checks.begin_batch(pids[:, 0].astype(np.int64) + gx * (pids[:, 1] + gy * pids[:, 2].astype(np.int64)))
        for value, arg in zip(self.fn.args, args):
            self.env[value.id] = arg
        self.run_region(self.fn.body, None)

    def run_region(self, region: Region, active, args=()) -> list[np.ndarray]:
        env = self.env
        handlers, affine_handlers = self.handlers, self.affine_handlers
        for value, arg in zip(region.args, args):
            env[value.id] = arg
        for op in region.ops:
            if op.opcode in ("yield", "condition"):
                return [env[v.id] for v in op.operands]  # affine values stay symbolic across iterations
            handler = handlers.get(op.opcode)
            if handler is None:
                raise NotImplementedError(render_location(op.loc, f"the interpreter cannot execute '{op.opcode}' yet"))
            args = [env[v.id] for v in op.operands]
            outputs = NotImplemented
            if op.opcode not in _PASS_AFFINE and any(type(a) is Affine for a in args):
                special = affine_handlers.get(op.opcode)
                if special is not None:
                    outputs = special(self, op, args, active)
                if outputs is NotImplemented:
                    args = [_concrete(a) for a in args]
            if outputs is NotImplemented:
                outputs = handler(self, op, args, active)
            if op.results:
                if len(op.results) == 1 and not isinstance(outputs, list):
                    outputs = [outputs]
                for value, out in zip(op.results, outputs):
                    env[value.id] = out
        return []

    # compaction --------------------------------------------------------------------------------
    def can_compact(self) -> bool:
        """Whether a region may run on a subset of the batch's programs: not under debug mode's
        checks or a spin watch, which follow every program of the batch by its lane."""
        return self.checks is None and not self.watches

    @contextlib.contextmanager
    def compacted(self, members: np.ndarray):
        """Runs what is inside on the programs ``members`` (indices into the current batch) alone:
        values from outside are gathered for them when first used, program ids follow."""
        saved = (self.env, self.pids, self.batch)
        self.env = _ProgramSubset(self.env, members)
        self.pids, self.batch = self.pids[members], len(members)
        try:
            yield
        finally:
            self.env, self.pids, self.batch = saved

    def active_lanes(self, active, shape_rank: int):
        return None if active is None else _expand_programs(active, shape_rank)


_EXEC = {}
# Control flow hands its operands to regions untouched, so affine values stay symbolic in loops.
_PASS_AFFINE = frozenset({"if", "for", "while"})


def handles(*opcodes):
    def register(fn):
        for opcode in opcodes:
            _EXEC[opcode] = fn
        return fn

    return register


# values -----------------------------------------------------------------------------------------
@handles("constant")
def exec_constant(ex, op, args, active):
    return np.array([op.attrs["value"]]).astype(op.result.type.numpy) if not op.result.type.is_bool() \
        else np.array([bool(op.attrs["value"])])


@handles("arange")
def exec_arange(ex, op, args, active):
    return make_arange(op.attrs["start"], op.attrs["end"] - op.attrs["start"])


@handles("program_id")
def exec_program_id(ex, op, args, active):
    return ex.pids[:, op.attrs["axis"]].copy()


@handles("num_programs")
def exec_num_programs(ex, op, args, active):
    return np.array([ex.grid[op.attrs["axis"]]], dtype=np.int32)


# shapes --------------------------------------------------------------------------------------------
@handles("splat")
def exec_splat(ex, op, args, active):
    (x,) = args
    lazy = make_splat(x, op.result.type)
    return lazy if lazy is not None else x.reshape(x.shape + (1,) * len(op.result.type.shape))


@handles("broadcast")
def exec_broadcast(ex, op, args, active):
    return args[0]  # broadcast lazily: size-1 axes stretch when used


@handles("reshape")
def exec_reshape(ex, op, args, active):
    x = _full(args[0], op.operands[0].type)
    return x.reshape((x.shape[0],) + T.shape_of(op.result.type))


@handles("permute")
def exec_permute(ex, op, args, active):
    return np.transpose(args[0], (0,) + tuple(d + 1 for d in op.attrs["order"]))


# elementwise -----------------------------------------------------------------------------------------
def _binary(fn):
    def run(ex, op, args, active):
        return fn(args[0], args[1])

    return run


def _modulo_2_for_bool(fn):
    """i1 arithmetic wraps modulo 2, as LLVM's does: + and - are xor (numpy's bool + is an or)."""
    def apply(a, b):
        return np.logical_xor(a, b) if a.dtype == np.bool_ else fn(a, b)

    return apply


for _opcode, _fn in {
    "add": _modulo_2_for_bool(np.add), "sub": _modulo_2_for_bool(np.subtract), "mul": np.multiply,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}.items():
    _EXEC[_opcode] = _binary(_fn)


@handles("div")
def exec_div(ex, op, args, active):
    a, b = args
    if a.dtype in (np.float32, np.float64):
        return np.divide(a, b)
    return (a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)


@handles("floordiv")
def exec_floordiv(ex, op, args, active):
    return numerics.int_floordiv(*args)


@handles("mod")
def exec_mod(ex, op, args, active):
    a, b = args
    if op.result.type.scalar.is_floating():
        return np.fmod(a, b)
    return numerics.int_mod(a, b)


@handles("shl", "shr")
def exec_shift(ex, op, args, active):
    a, b = args
    bits = a.dtype.itemsize * 8
    too_far = (b < 0) | (b >= bits)
    safe = np.where(too_far, 0, b).astype(a.dtype)
    if op.opcode == "shl":
        out = np.left_shift(a, safe)
        return np.where(too_far, 0, out).astype(a.dtype)
    out = np.right_shift(a, safe)
    fill = np.where(a < 0, -1, 0) if np.issubdtype(a.dtype, np.signedinteger) else 0
    return np.where(too_far, fill, out).astype(a.dtype)


@handles("cmp")
def exec_cmp(ex, op, args, active):
    fn = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
          "ne": np.not_equal}[op.attrs["predicate"]]
    return fn(args[0], args[1])


@handles("minimum", "maximum")
def exec_minmax(ex, op, args, active):
    a, b = args
    floating = op.result.type.scalar.is_floating()
    if floating and op.attrs.get("propagate_nan", "none") == "none":
        fn = np.fmin if op.opcode == "minimum" else np.fmax
    else:
        fn = np.minimum if op.opcode == "minimum" else np.maximum
    result = fn(a, b)
    if floating:
        # Signed zeros as IEEE 754-2019 orders them (-0 < +0): max(+0, -0) = +0, min(+0, -0) = -0.
        both_zero = (a == 0) & (b == 0)
        if both_zero.any():
            signed = a + b if op.opcode == "maximum" else -((-a) + (-b))
            result = np.where(both_zero, signed, result)
    return result


@handles("neg")
def exec_neg(ex, op, args, active):
    return args[0] if args[0].dtype == np.bool_ else np.negative(args[0])  # i1: 0 - x == x (mod 2)


@handles("not")
def exec_not(ex, op, args, active):
    return np.invert(args[0])


@handles("abs")
def exec_abs(ex, op, args, active):
    return np.abs(args[0])


@handles("select")
def exec_select(ex, op, args, active):
    return np.where(args[0], args[1], args[2])


@handles("exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor", "ceil")
def exec_math(ex, op, args, active):
    return numerics.math_function(op.opcode, args[0])


@handles("fma")
def exec_fma(ex, op, args, active):
    return numerics.fma(*args)


@handles("umulhi")
def exec_umulhi(ex, op, args, active):
    return numerics.umulhi(*args)


@handles("cast")
def exec_cast(ex, op, args, active):
    return numerics.cast(args[0], op.operands[0].type.scalar, op.attrs["to"], op.attrs.get("rounding"))


@handles("bitcast")
def exec_bitcast(ex, op, args, active):
    target = op.result.type.scalar
    if target.is_ptr() or op.operands[0].type.scalar.is_ptr():
        return args[0]
    return np.ascontiguousarray(args[0]).view(target.numpy)


@handles("ptr_to_int", "int_to_ptr")
def exec_pointer_int(ex, op, args, active):
    return args[0].astype(op.result.type.scalar.numpy if op.opcode == "ptr_to_int" else np.int64)


@handles("addptr")
def exec_addptr(ex, op, args, active):
    ptr, offset = args
    size = op.result.type.scalar.element_ty.itemsize
    return ptr + offset.astype(np.int64) * size


# memory -------------------------------------------------------------------------------------------------
def _access_mask(ex, mask, active, ty):
    rank = len(T.shape_of(ty))
    lanes = None if mask is None else _full(mask, ty, ex.batch)
    if active is not None:
        act = np.broadcast_to(_expand_programs(active, rank), (ex.batch,) + T.shape_of(ty))
        lanes = act if lanes is None else lanes & act
    return lanes


@handles("load")
def exec_load(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    mask = args[1] if len(args) > 1 else None
    other = args[2] if len(args) > 2 else None
    lanes = _access_mask(ex, mask, active, ptr_ty)
    dtype = op.result.type.scalar.numpy
    return ex.memory.load(pointers, lanes, other, dtype, op.loc, ex.program_of_lane)


@handles("store")
def exec_store(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    lanes = _access_mask(ex, args[2] if len(args) > 2 else None, active, ptr_ty)
    dtype = ptr_ty.scalar.element_ty.numpy
    ex.memory.store(pointers, args[1].astype(dtype, copy=False), lanes, dtype, op.loc, ex.program_of_lane)
    return []


@handles("atomic_rmw", "atomic_cas")
def exec_atomic(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    if op.opcode == "atomic_cas":
        kind, compare, values, mask = "cas", args[1], args[2], None
    else:
        kind, compare, values = op.attrs["kind"], None, args[1]
        mask = args[2] if len(args) > 2 else None
    lanes = _access_mask(ex, mask, active, ptr_ty)
    dtype = ptr_ty.scalar.element_ty.numpy
    return ex.memory.atomic(kind, pointers, values, compare, lanes, dtype, op.loc, ex.program_of_lane)


# reductions and scans ----------------------------------------------------------------------------------
def _combine_with_region(ex, region):
    def combine(left, right):
        saved = ex.env.copy()
        outputs = ex.run_region(region, None, list(left) + list(right))
        ex.env = saved
        return [np.asarray(o) for o in outputs]

    return combine


@handles("reduce")
def exec_reduce(ex, op, args, active):
    axis = op.attrs["axis"] + 1
    kind = op.attrs["kind"]
    values = [np.asarray(_full(a, t.type)) for a, t in zip(args, op.operands)]
    x = values[0]
    if kind == "sum":
        return numerics.sum_tree(x, axis)
    if kind == "max":
        return numerics.tree_reduce([x], axis, lambda l, r: [_max_nan(l[0], r[0])])[0]
    if kind == "min":
        return numerics.tree_reduce([x], axis, lambda l, r: [_min_nan(l[0], r[0])])[0]
    if kind == "xor":
        return np.bitwise_xor.reduce(x, axis=axis)
    if kind in ("argmax", "argmin"):
        fn = np.argmax if kind == "argmax" else np.argmin
        return fn(x, axis=axis).astype(np.int32)
    if kind == "custom":
        # Region arguments are scalars; give them the full leading shape of the halves.
        return numerics.tree_reduce(values, axis, _combine_with_region(ex, op.regions[0]))
    raise NotImplementedError(f"reduce kind {kind}")


def _max_nan(a, b):
    return np.fmax(a, b) if a.dtype.kind == "f" or a.dtype.kind == "V" else np.maximum(a, b)


def _min_nan(a, b):
    return np.fmin(a, b) if a.dtype.kind == "f" or a.dtype.kind == "V" else np.minimum(a, b)


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


# debugging -------------------------------------------------------------------------------------------------
@handles("print")
def exec_print(ex, op, args, active):
    """Prints as compiled Triton does, one line per element (and operand):
    ``pid (x, y, z) idx (i, j) prefix value``; ``idx ()`` for scalars; ``(operand n)`` when there
    are several values; floats as C's %f; hex as 0x with the type's width in digits."""
    prefix = op.attrs["prefix"].strip()
    label = f" {prefix}" if prefix else ":"
    programs = range(ex.batch) if active is None else np.flatnonzero(active)
    for p in programs:
        x, y, z = ex.program_of_lane(int(p))
        head = f"pid ({x}, {y}, {z})"
        if not op.operands:
            print(f"{head} {prefix}")
            continue
        for lane_values in _print_lanes(ex, op, args, int(p)):
            for n, (index, value, ty) in enumerate(lane_values):
                operand = f" (operand {n})" if len(op.operands) > 1 else ""
                print(f"{head} idx ({index}){label}{operand} {_format_scalar(value, ty, op.attrs['hex'])}")
    return []


def _print_lanes(ex, op, args, program: int):
    """Per lane, each operand's (index text, value, type)."""
    columns = []
    for value, arg in zip(op.operands, args):
        shape = T.shape_of(value.type)
        full = np.asarray(_full(arg, value.type, ex.batch))[program]
        widths = [len(str(max(0, n - 1))) for n in shape]
        column = []
        for index, element in (np.ndenumerate(full) if shape else [((), full)]):
            text = ", ".join(f"{i:{w}}" for i, w in zip(index, widths))
            column.append((text, element, value.type.scalar))
        columns.append(column)
    return zip(*columns)


def _format_scalar(value, ty, hex_format: bool) -> str:
    if ty.is_ptr():
        return f"0x{int(value):x}"
    if hex_format:
        array = np.asarray(value)
        bits = int(array.view(f"uint{array.itemsize * 8}"))
        return f"0x{bits:0{array.itemsize * 2}x}"
    if ty.is_floating():
        return f"{float(value):f}"
    return str(int(value))


@handles("assert")
def exec_assert(ex, op, args, active):
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
        raise HintViolationError(render_location(
            op.loc, f"tl.{kind}({list(values)}) is false for the values this kernel computed",
            "a false hint makes compiled code wrong on a GPU; fix the hint or the values"))
    return x


@handles("barrier")
def exec_barrier(ex, op, args, active):
    return []


# random numbers, libdevice, sorting, gathering and joining --------------------------------------------------
def _same_batch(args, operands) -> list[np.ndarray]:
    """The operands as complete blocks with one common leading (program) axis."""
    lead = max(np.shape(a)[0] for a in args)
    return [np.broadcast_to(a, (lead,) + T.shape_of(v.type)) for a, v in zip(args, operands)]


@handles("philox")
def exec_philox(ex, op, args, active):
    return numerics.philox(*args, n_rounds=op.attrs["n_rounds"])


@handles("libdevice")
def exec_libdevice(ex, op, args, active):
    from . import libdevice

    return libdevice.evaluate(op.attrs["fn"], args, op.result.type.scalar.numpy)


@handles("join")
def exec_join(ex, op, args, active):
    return np.stack(_same_batch(args, op.operands), axis=-1)


@handles("split")
def exec_split(ex, op, args, active):
    x = _full(args[0], op.operands[0].type)
    return [x[..., 0], x[..., 1]]


@handles("cat")
def exec_cat(ex, op, args, active):
    return np.concatenate(_same_batch(args, op.operands), axis=op.attrs["axis"] + 1)


@handles("flip")
def exec_flip(ex, op, args, active):
    return np.flip(_full(args[0], op.operands[0].type), axis=op.attrs["axis"] + 1)


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
    keep = np.ones(x.shape, dtype=bool) if len(values) == 1 else np.asarray(values[1])
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
