"""Executes tile IR with numpy over a batch of programs at once.

Every value is an array whose first axis is the program axis (length B, or 1 when the value is
the same in every program), followed by the block's axes; a block axis may have length 1 where
the value is broadcast along it (splats and constants stay small). Control flow that differs
between programs runs predicated: both sides of an ``if``, loops until every program is done,
with loads, stores, prints and asserts masked by the programs still active.

``exec_<opcode>(executor, op, args, active)`` implements each opcode; ``active`` is None when
every program of the batch is active, else a boolean array of length B. Values, shapes,
elementwise ops and memory are here; control flow is in control_flow.py, reductions, scans,
dot, sort, gather and histogram in cross_lane.py, print, assert and hints in diagnostics.py.
Each registers its handlers with ``handles``; the imports at the end of this module make sure
all of them are in the table before an ``Executor`` runs.
"""
from __future__ import annotations

import contextlib

import time

import numpy as np

from ... import config
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Region
from ...compiler.ir.spec import MATH_OPCODES, TERMINATORS
from ...errors import TritonError, internal_error, render_location
from ...numerics import arithmetic as numerics
from ...numerics import elementwise
from . import analysis_check, checks, hint_check, math_functions
from .affine import AFFINE_HANDLERS, Affine, make_arange, make_splat
from .memory import Memory


def _full(x: np.ndarray, ty, batch: int | None = None) -> np.ndarray:
    """``x`` broadcast to its complete block shape (a view; nothing is copied)."""
    lead = x.shape[0] if batch is None else batch
    return np.broadcast_to(x, (lead,) + T.shape_of(ty))


def _concrete(x):
    """An ordinary array for ``x`` (materialising an Affine)."""
    return x.materialize() if type(x) is Affine else x


def operand_value(op: Operation, args: list, name: str):
    """The value of ``op``'s operand in slot ``name`` (the IR spec's name), or None when absent."""
    index = op.operand_index(name)
    return None if index is None else args[index]


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
    def __init__(self, fn: Function, memory: Memory, grid: tuple[int, int, int], reference: bool = False):
        self.fn = fn
        self.reference = reference  # config.reference_mode: no affine values, no compaction
        self.memory = memory
        self.grid = grid
        self.env: dict[int, np.ndarray] = {}
        self.pids: np.ndarray = np.zeros((1, 3), dtype=np.int32)
        self.batch = 1
        self.handlers, self.affine_handlers = _EXEC, ({} if reference else AFFINE_HANDLERS)
        self.checks = None  # debug mode's checks.DebugChecks, or None
        self.spin_check_after = config.spin_check_after()  # while iterations before SpinWatch starts
        self.watches: list = []  # the SpinWatches of the while loops running now
        self._unwatched = None
        self.program_order = False
        self.shuffled = False
        self.progress = (0, 1)  # (programs finished, programs in the launch)
        self.false_hints: dict[int, Operation] = {}  # hint ops found false in this launch
        self.handlers, self.affine_handlers = hint_check.checked_tables(fn, self.handlers, self.affine_handlers)
        limit = analysis_check.check_limit()  # TRITIUM_CHECK_ANALYSIS: compile-time claims checked at accesses
        if limit is not None:
            self.handlers, self.affine_handlers = analysis_check.checked_tables(
                fn, self.handlers, self.affine_handlers, limit)

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
            if op.opcode in TERMINATORS:
                return [env[v.id] for v in op.operands]  # affine values stay symbolic across iterations
            handler = handlers.get(op.opcode)
            if handler is None:
                raise NotImplementedError(render_location(op.loc, f"the interpreter cannot execute '{op.opcode}' yet"))
            args = [env[v.id] for v in op.operands]
            outputs = NotImplemented
            try:
                if op.opcode not in _PASS_AFFINE and any(type(a) is Affine for a in args):
                    special = affine_handlers.get(op.opcode)
                    if special is not None:
                        outputs = special(self, op, args, active)
                    if outputs is NotImplemented:
                        args = [_concrete(a) for a in args]
                if outputs is NotImplemented:
                    outputs = handler(self, op, args, active)
            except TritonError:
                raise
            except Exception as error:  # not the kernel's mistake: ours
                raise internal_error(error, kernel=self.fn.name, loc=op.loc, opcode=op.opcode,
                                     where="the interpreter") from error
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
        return self.checks is None and not self.watches and not self.reference

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
    return elementwise.constant_array(op.attrs["value"], op.result.type.scalar)


@handles("arange")
def exec_arange(ex, op, args, active):
    lazy = make_arange(op.attrs["start"], op.attrs["end"] - op.attrs["start"])
    return lazy.materialize() if ex.reference else lazy


@handles("program_id")
def exec_program_id(ex, op, args, active):
    return ex.pids[:, op.attrs["axis"]].copy()


@handles("num_programs")
def exec_num_programs(ex, op, args, active):
    return np.array([ex.grid[op.attrs["axis"]]], dtype=np.int32)


@handles("special_register")
def exec_special_register(ex, op, args, active):
    """The IR spec's host values: the real-time clock in ns, the CPU core running the interpreter."""
    if op.attrs["name"] == "globaltimer":
        return np.array([time.time_ns()], dtype=np.int64)
    return np.array([_current_core()], dtype=np.int32)


def _current_core() -> int:
    import ctypes
    import ctypes.util

    try:
        return max(0, int(ctypes.CDLL(ctypes.util.find_library("c") or None).sched_getcpu()))
    except (OSError, AttributeError):  # no sched_getcpu (not glibc): one core
        return 0


# shapes --------------------------------------------------------------------------------------------
@handles("splat")
def exec_splat(ex, op, args, active):
    (x,) = args
    lazy = None if ex.reference else make_splat(x, op.result.type)
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
# Each handler calls numerics.elementwise, the definition constant folding uses too: one place for
# every edge case (i1 modulo 2, shifts past the width, x // 0, NaN and signed zeros in min/max).
def _binary(fn):
    def run(ex, op, args, active):
        return fn(args[0], args[1])

    return run


def _unary(fn):
    def run(ex, op, args, active):
        return fn(args[0])

    return run


for _opcode, _fn in elementwise.BINARY.items():
    _EXEC[_opcode] = _binary(_fn)
for _opcode, _fn in elementwise.UNARY.items():
    _EXEC[_opcode] = _unary(_fn)


@handles("div")
def exec_div(ex, op, args, active):
    if op.attrs.get("rounding") == "approx":
        return elementwise.divide_approx(args[0], args[1])
    return elementwise.divide(args[0], args[1])


@handles("mod")
def exec_mod(ex, op, args, active):
    return elementwise.remainder(args[0], args[1], op.result.type.scalar.is_floating())


@handles("cmp")
def exec_cmp(ex, op, args, active):
    return elementwise.compare(args[0], args[1], op.attrs["predicate"])


@handles("minimum", "maximum")
def exec_minmax(ex, op, args, active):
    return elementwise.extremum(args[0], args[1], op.opcode == "maximum", op.result.type.scalar.is_floating(),
                                op.attrs.get("propagate_nan", "none"))


@handles("select")
def exec_select(ex, op, args, active):
    return elementwise.select(args[0], args[1], args[2])


@handles(*MATH_OPCODES)
def exec_math(ex, op, args, active):
    compiled = math_functions.evaluate(op, args)
    return numerics.math_function(op.opcode, args[0]) if compiled is None else compiled


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
    """Real addresses out (as on a GPU), tagged pointers in: an address made from an integer points
    into the tensor argument or other live tensor holding it (``Memory.pointers``)."""
    if op.opcode == "ptr_to_int":
        return ex.memory.addresses(args[0]).astype(op.result.type.scalar.numpy)
    element = op.result.type.scalar.element_ty
    size = 8 if element.is_ptr() else element.itemsize
    return ex.memory.pointers(args[0].astype(np.int64), size)


@handles("addptr")
def exec_addptr(ex, op, args, active):
    ptr, offset = args
    size = op.result.type.scalar.element_ty.itemsize
    return ptr + offset.astype(np.int64) * size


def _evaluated(ex, op, args, active):
    return elementwise.evaluate(op.opcode, args, op.attrs, op.operands[0].type.scalar)


# Every other op numerics.elementwise defines (clamp, ...) runs that definition: it needs no handler here.
for _opcode in elementwise.EVALUATE.keys() - _EXEC.keys():
    _EXEC[_opcode] = _evaluated


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
    mask = operand_value(op, args, "mask")
    other = operand_value(op, args, "other")
    lanes = _access_mask(ex, mask, active, ptr_ty)
    dtype = op.result.type.scalar.numpy
    return ex.memory.load(pointers, lanes, other, dtype, op.loc, ex.program_of_lane)


@handles("store")
def exec_store(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    lanes = _access_mask(ex, operand_value(op, args, "mask"), active, ptr_ty)
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
        mask = operand_value(op, args, "mask")
    lanes = _access_mask(ex, mask, active, ptr_ty)
    dtype = ptr_ty.scalar.element_ty.numpy
    return ex.memory.atomic(kind, pointers, values, compare, lanes, dtype, op.loc, ex.program_of_lane)


# synchronisation ----------------------------------------------------------------------------------------
@handles("barrier")
def exec_barrier(ex, op, args, active):
    return []


# random numbers, libdevice, joining and splitting ---------------------------------------------------------
def _same_batch(args, operands) -> list[np.ndarray]:
    """The operands as complete blocks with one common leading (program) axis."""
    lead = max(np.shape(a)[0] for a in args)
    return [np.broadcast_to(a, (lead,) + T.shape_of(v.type)) for a, v in zip(args, operands)]


@handles("philox")
def exec_philox(ex, op, args, active):
    return numerics.philox(*args, n_rounds=op.attrs["n_rounds"])


@handles("libdevice")
def exec_libdevice(ex, op, args, active):
    from ...numerics import libdevice

    compiled = math_functions.evaluate(op, args)
    return libdevice.evaluate(op.attrs["fn"], args, op.result.type.scalar.numpy) if compiled is None else compiled


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


# the other families of handlers register themselves when imported (they import this module's helpers)
from . import atomic_access, control_flow, cross_lane, diagnostics  # noqa: E402, F401
