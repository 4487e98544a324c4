"""The interpreter's debug mode (``TRITIUM_DEBUG=1``) and its check for ``while`` loops that never exit.

Debug mode swaps some opcode handlers for checked versions (``debug_tables``) and gives the
launch's ``Memory`` a ``DebugChecks`` that sees every store and atomic. With debug mode off none
of this is installed: the executor runs its ordinary handler tables and ``Memory`` tests one
attribute per store.

- int32 ``add``/``sub``/``mul`` whose exact result leaves the int32 range -> ``IntegerOverflowError``
  (symbolic affine blocks are checked from their extremes; arrays are recomputed in int64);
- integer ``//``, ``%`` by zero -> ``DivisionByZeroError``;
- float -> int casts of NaN, +-inf or out-of-range values -> ``InvalidConversionError``;
- a store by one program to an element another program stored to in the same launch, with no
  synchronisation between the two -> ``RaceError``. Each allocation gets an array holding, per
  element, 1 + the linear id of the program that last stored there (0: none). Where programs run one
  at a time because they synchronise through atomics, ``acquire``/``release`` atomics carry vector
  clocks (one entry per program), so stores ordered by a lock are not races;
- a ``while`` iteration that repeats the previous one exactly -> ``DeadlockError`` (``SpinWatch``).
  The check runs in every mode, from the first iteration in debug mode and after
  ``TRITIUM_SPIN_CHECK_AFTER`` iterations otherwise.

Only programs that are active (not masked off by divergent control flow) are checked.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ...errors import DeadlockError, render_location
from ...compiler.ir.spec import OVERFLOW_CHECKED, POINTER_READS, POINTER_WRITES, ZERO_DIVISOR_CHECKED, opcodes_with
from ...numerics import arithmetic
from .. import debug_reports
from ..debug_reports import INT32_MAX, INT32_MIN
from .affine import Affine

_EXACT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": lambda a, b: np.subtract(b, a)}


def _locate(bad: np.ndarray, active, batch: int):
    """(program lane, block lane) of the first true element of ``bad`` in an active program, or None.

    ``bad`` has the program axis first, of length ``batch`` or 1 (the same in every program)."""
    if active is not None:
        if bad.shape[0] == 1:
            if not active.any() or not bad.any():
                return None
            first = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), bad.shape)
            return int(np.argmax(active)), tuple(int(i) for i in first[1:])
        bad = bad & active.reshape(active.shape + (1,) * (bad.ndim - 1))
    if not bad.any():
        return None
    first = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), bad.shape)
    return int(first[0]), tuple(int(i) for i in first[1:])


def _at(x: np.ndarray, shape, where: tuple):
    """The element of ``x`` (broadcast to ``shape``) at ``where``, as a Python number."""
    value = np.broadcast_to(x, shape)[where]
    return value.item() if hasattr(value, "item") else value


def _is_int32(ty) -> bool:
    return ty.scalar.name == "int32"


# checked arithmetic ---------------------------------------------------------------------------------
def _overflow(ex, op, a64, b64, exact, bad, active):
    found = _locate(bad, active, ex.batch)
    if found is None:
        return
    lane_program, lane = found
    where = (0 if exact.shape[0] == 1 else lane_program,) + lane
    pid = ex.program_of_lane(lane_program)
    x, y, z = (_at(v, exact.shape, where) for v in (a64, b64, exact))
    raise debug_reports.overflow_error(ex.fn.name, op, pid, lane, x, y, z)


def _as_int64(x) -> np.ndarray:
    if type(x) is Affine:
        return Affine(x.base, x.strides, x.shape, np.int64).materialize()
    return np.asarray(x).astype(np.int64)


def _checked_int_arith(inner):
    def run(ex, op, args, active):
        out = inner(ex, op, args, active)
        if _is_int32(op.result.type):
            a64 = _as_int64(args[0])
            b64 = np.zeros(1, np.int64) if op.opcode == "neg" else _as_int64(args[1])
            exact = _EXACT[op.opcode](a64, b64)
            bad = (exact < INT32_MIN) | (exact > INT32_MAX)
            if bad.any():
                _overflow(ex, op, a64, b64, exact, bad, active)
        return out

    return run


def _checked_affine_arith(inner):
    """Affine results keep exact int64 values: their extremes tell whether any lane left int32."""
    def run(ex, op, args, active):
        out = inner(ex, op, args, active)
        if type(out) is Affine and _is_int32(op.result.type):
            low, high = out.extremes()
            if low < INT32_MIN or high > INT32_MAX:
                a64, b64 = _as_int64(args[0]), _as_int64(args[1])
                exact = _as_int64(out)
                _overflow(ex, op, a64, b64, exact, (exact < INT32_MIN) | (exact > INT32_MAX), active)
        return out

    return run


def _checked_division(inner):
    def run(ex, op, args, active):
        a, b = args
        if b.dtype.kind in "iu" and not op.result.type.scalar.is_floating():
            zero = b == 0
            if zero.any():
                shape = np.broadcast_shapes(np.shape(a), np.shape(b))
                zero = np.broadcast_to(zero, shape)
                found = _locate(zero, active, ex.batch)
                if found is not None:
                    lane_program, lane = found
                    pid = ex.program_of_lane(lane_program)
                    x = _at(a, shape, (0 if shape[0] == 1 else lane_program,) + lane)
                    raise debug_reports.division_error(ex.fn.name, op, pid, lane, x)
        return inner(ex, op, args, active)

    return run


def _checked_cast(inner):
    def run(ex, op, args, active):
        src = op.operands[0].type.scalar
        dst = op.attrs["to"]
        if src.is_floating() and dst.is_int() and not dst.is_bool():
            x = np.asarray(args[0])
            low, high = debug_reports.integer_range(dst)
            wide = np.trunc(x.astype(np.float64))
            bad = np.isnan(wide) | (wide >= float(high) + 1.0) | (wide < float(low))
            if bad.any():
                found = _locate(bad, active, ex.batch)
                if found is not None:
                    lane_program, lane = found
                    pid = ex.program_of_lane(lane_program)
                    value = float(_at(x.astype(np.float64), x.shape,
                                      (0 if x.shape[0] == 1 else lane_program,) + lane))
                    raise debug_reports.conversion_error(ex.fn.name, op, pid, lane, value, src, dst)
        return inner(ex, op, args, active)

    return run


def _tracked_access(inner):
    """Tells the launch's ``DebugChecks`` which op the next store or atomic comes from."""
    def run(ex, op, args, active):
        ex.checks.op = op
        return inner(ex, op, args, active)

    return run


def debug_tables(exec_table: dict, affine_table: dict) -> tuple[dict, dict]:
    """Copies of the executor's handler tables with debug mode's checked handlers."""
    checked, affine = dict(exec_table), dict(affine_table)
    for opcode in opcodes_with(OVERFLOW_CHECKED):  # neg too: Triton's -x is 0 - x, which its sanitizer checks
        checked[opcode] = _checked_int_arith(exec_table[opcode])
        if opcode in affine_table:
            affine[opcode] = _checked_affine_arith(affine_table[opcode])
    for opcode in opcodes_with(ZERO_DIVISOR_CHECKED):
        checked[opcode] = _checked_division(exec_table[opcode])
    checked["cast"] = _checked_cast(exec_table["cast"])
    for opcode in POINTER_WRITES:
        checked[opcode] = _tracked_access(exec_table[opcode])
        if opcode in affine_table:
            affine[opcode] = _tracked_access(affine_table[opcode])
    return checked, affine


# races -----------------------------------------------------------------------------------------------
def _alias_groups(allocations) -> dict:
    """id(allocation) -> (allocations sharing its bytes, lowest address, elements spanned), for the
    arguments whose byte ranges overlap another's (``debug_reports.alias_groups``)."""
    by_id = {id(a): a for a in allocations}
    groups = debug_reports.alias_groups({key: (a.address, a.nbytes, a.element_size) for key, a in by_id.items()})
    return {key: ([by_id[k] for k in members], start, units) for key, (members, start, units) in groups.items()}


class DebugChecks:
    """Per launch: who stored where, and (for kernels whose programs run one at a time) which
    program's stores the running program is ordered after through acquire/release atomics.

    Granularity is the tensor's element: a store of a narrower type through a cast pointer counts
    as a store to the whole element it falls in.
    """

    def __init__(self, kernel: str, grid, memory, program_order: bool):
        self.kernel = kernel
        self.grid = grid
        self.total = grid[0] * grid[1] * grid[2]
        self.program_order = program_order
        self.op = None  # the store or atomic being executed
        self.linear = np.zeros(1, dtype=np.int64)  # linear program id of each lane of the batch
        self.tags = np.ones(1, dtype=np.int32)  # 1 + linear: what a store leaves in the writer arrays
        self._writers: dict[int, np.ndarray] = {}  # id(allocation) -> 1 + last writer's linear id (0: none)
        self._epochs: dict[int, np.ndarray] = {}  # id(allocation) -> writer's own clock at that store
        # vector clocks (program order only): the running program's, and snapshots atomics released
        self.clock = None
        self._released = False  # a release since the program's clock last ticked
        self._snapshot = -1  # id of the snapshot that equals ``clock``, or -1
        self._sync: dict[int, np.ndarray] = {}  # id(allocation) -> snapshot id per element (-1: none)
        self._snapshots: dict[int, np.ndarray] = {}
        self._refs: dict[int, int] = {}
        self._next_snapshot = 0
        self._alias_groups = _alias_groups(memory.allocations)
        memory.checks = self

    def program(self, linear: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        linear = int(linear)
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def begin_batch(self, linear: np.ndarray) -> None:
        self.linear = linear.astype(np.int64)
        self.tags = (self.linear + 1).astype(np.int32)
        if self.program_order:
            self.clock = np.zeros(self.total, dtype=np.int32)
            self.clock[int(self.linear[0])] = 1
            self._released = False
            self._snapshot = -1

    # per-element arrays --------------------------------------------------------------------------
    @staticmethod
    def _units(alloc) -> int:
        size = max(1, alloc.element_size)
        return -(-alloc.nbytes // size)

    def _alias_views(self, store: dict, alloc, fill: int) -> np.ndarray:
        """``store[id(alloc)]``, made on first use, shared with the arguments that alias ``alloc``."""
        view = store.get(id(alloc))
        if view is None:
            group = self._alias_groups.get(id(alloc))
            if group is None:
                view = store[id(alloc)] = np.full(self._units(alloc), fill, dtype=np.int32)
            else:
                members, start, units = group
                shared = np.full(units, fill, dtype=np.int32)
                for member in members:
                    first = (member.address - start) // max(1, member.element_size)
                    store[id(member)] = shared[first:first + self._units(member)]
                view = store[id(alloc)]
        return view

    def _writer_of(self, alloc) -> np.ndarray:
        writers = self._alias_views(self._writers, alloc, 0)
        if self.program_order:
            self._alias_views(self._epochs, alloc, 0)
        return writers

    def _sync_of(self, alloc) -> np.ndarray:
        return self._alias_views(self._sync, alloc, -1)

    # stores ------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        """A store after a release gets a new epoch of the program's own clock: programs that
        acquired the release are ordered after the stores before it, not after this one."""
        if self.clock is not None and self._released:
            self.clock[int(self.linear[0])] += 1
            self._released = False
            self._snapshot = -1

    def _unordered(self, previous: np.ndarray, mine: np.ndarray, epochs):
        """Lanes whose previous writer (a tag) is another program this one is not ordered after;
        None when there are none."""
        if previous.size == 0 or previous.max() == 0:
            return None  # nothing stored there yet: the common case, in one pass
        other = (previous != 0) & (previous != mine)
        if self.clock is not None and other.any():
            other &= epochs > self.clock[np.where(other, previous - 1, 0)]
        return other if other.any() else None

    def before_store(self, groups, shape, itemsize: int) -> None:
        """Checks a gather-scatter store (``Memory.store``'s groups) before it writes anything."""
        self._tick()
        lanes_program = np.broadcast_to(np.arange(shape[0]).reshape((shape[0],) + (1,) * (len(shape) - 1)), shape)
        pending = []
        for alloc, lanes, index in groups:
            index = np.broadcast_to(index, shape)
            if lanes is True:
                units, programs, positions = index.reshape(-1), lanes_program.reshape(-1), None
            else:
                lanes = np.broadcast_to(lanes, shape)
                units, programs = index[lanes], lanes_program[lanes]
                positions = np.flatnonzero(lanes.reshape(-1))
            if itemsize != alloc.element_size:
                units = (units * itemsize) // max(1, alloc.element_size)
            if units.size == 0:
                continue
            mine = self.tags[programs]
            writers = self._writer_of(alloc)
            epochs = self._epochs.get(id(alloc))
            previous = writers[units]
            bad = self._unordered(previous, mine, None if epochs is None else epochs[units])
            if bad is not None:
                i = int(np.argmax(bad))
                self._raise(alloc, int(units[i]), int(previous[i]), int(mine[i]), shape,
                            i if positions is None else int(positions[i]))
            pending.append((alloc, units, mine, positions))
        for alloc, units, mine, positions in pending:
            self._writer_of(alloc)[units] = mine
        if len(self.tags) > 1:  # two programs of this batch storing to one element now
            self._clash_in_batch(pending, shape)
        if self.clock is not None:
            for alloc, units, mine, positions in pending:
                self._epochs[id(alloc)][units] = self.clock[mine - 1]

    def _clash_in_batch(self, pending, shape) -> None:
        """After a batch's store landed: an element whose tag is not that of every lane of the batch
        that stored to it was stored by two programs (through one argument, or through two over the
        same memory, whose arrays are one)."""
        for alloc, units, mine, positions in pending:
            landed = self._writer_of(alloc)[units]
            clash = landed != mine
            if not clash.any():
                continue
            i = int(np.argmax(clash))  # a lane of the earlier program; report the later one's lane
            where = alloc.address + int(units[i]) * max(1, alloc.element_size)
            for other, other_units, other_mine, other_positions in pending:
                at = other.address + other_units * max(1, other.element_size)
                hits = np.flatnonzero((at == where) & (other_mine == landed[i]))
                if hits.size:
                    j = int(hits[0])
                    self._raise(other, int(other_units[j]), int(mine[i]), int(other_mine[j]), shape,
                                j if other_positions is None else int(other_positions[j]))

    def before_window_store(self, window, dtype, batch: int, shape) -> None:
        """Checks a strided-window store (``Memory.store_window``, whose lanes never overlap)."""
        alloc = window.allocation
        step = window.program_step or 0
        lead = batch if step else 1
        view_shape = (lead,) + tuple(shape)
        strides = (step,) + tuple(window.lane_strides)
        if dtype.itemsize != alloc.element_size or window.starts is not None:
            rank = len(shape)
            if window.starts is not None:
                index = window.starts.astype(np.int64).reshape((-1,) + (1,) * rank)
            else:
                index = window.start + (np.arange(lead, dtype=np.int64) * step).reshape((lead,) + (1,) * rank)
            for axis, (n, stride) in enumerate(zip(shape, window.lane_strides)):
                axis_shape = (1,) + (1,) * axis + (n,) + (1,) * (rank - axis - 1)
                index = index + (np.arange(n, dtype=np.int64) * stride).reshape(axis_shape)
            full = (batch,) + tuple(shape)
            self.before_store([(alloc, True, np.broadcast_to(index, full))], full, dtype.itemsize)
            return
        self._tick()
        byte_strides = tuple(s * 4 for s in strides)

        def window_of(array):
            return np.lib.stride_tricks.as_strided(array[window.start:], shape=view_shape, strides=byte_strides,
                                                   writeable=True)

        writers = window_of(self._writer_of(alloc))
        epochs_array = self._epochs.get(id(alloc))
        epochs = None if epochs_array is None else window_of(epochs_array)
        mine = self.tags[:lead].reshape((lead,) + (1,) * len(shape))
        bad = self._unordered(writers, mine, epochs)
        if bad is not None:
            where = np.unravel_index(int(np.argmax(bad)), bad.shape)
            unit = window.start + sum(int(i) * s for i, s in zip(where, strides))
            self._raise(alloc, unit, int(writers[where]), int(np.broadcast_to(mine, bad.shape)[where]),
                        view_shape, int(np.ravel_multi_index(where, view_shape)))
        writers[...] = mine
        if epochs is not None:
            epochs[...] = self.clock[mine - 1]

    def _raise(self, alloc, unit: int, first: int, second: int, shape, position: int):
        """``first``, ``second``: the tags of the earlier writer and of the program storing now."""
        first, second = first - 1, second - 1
        loc = getattr(self.op, "loc", None)
        offset = (unit * alloc.element_size - alloc.pointer_offset) // max(1, alloc.element_size)
        lane = tuple(int(i) for i in np.unravel_index(position, shape)[1:])
        raise debug_reports.race_error(self.kernel, loc, self.program(first), self.program(second), alloc.name,
                                       offset, lane, self.program_order)

    # atomics ---------------------------------------------------------------------------------------------
    def after_atomic(self, groups, shape, old: np.ndarray, compare) -> None:
        """Acquire/release through the elements an atomic touched (program order only)."""
        if self.clock is None:
            return
        sem = (self.op.attrs.get("sem") if self.op is not None else None) or "acq_rel"
        acquire = sem in ("acquire", "acq_rel")
        release = sem in ("release", "acq_rel")
        touched = []
        for alloc, lanes, index in groups:
            index = np.broadcast_to(index, shape)
            selected = np.ones(shape, dtype=bool) if lanes is True else np.broadcast_to(lanes, shape)
            written = selected
            if compare is not None:  # a failed compare-and-swap writes nothing, so it releases nothing
                written = selected & arithmetic.bits_equal(old, np.asarray(compare).reshape(shape))
            read_units, written_units = index[selected], index[written]
            if old.dtype.itemsize != alloc.element_size:
                scale = old.dtype.itemsize
                read_units = (read_units * scale) // max(1, alloc.element_size)
                written_units = (written_units * scale) // max(1, alloc.element_size)
            touched.append((alloc, read_units, written_units))
        if acquire:
            for alloc, units, _ in touched:
                sync = self._sync_of(alloc)
                for snapshot in np.unique(sync[units]):
                    if snapshot >= 0:
                        joined = np.maximum(self.clock, self._snapshots[int(snapshot)])
                        if not np.array_equal(joined, self.clock):
                            self.clock = joined
                            self._snapshot = -1
        if release:
            for alloc, _, units in touched:
                units = np.unique(units)
                if units.size == 0:
                    continue
                if self._snapshot not in self._snapshots:
                    self._snapshot = self._next_snapshot
                    self._next_snapshot += 1
                    self._snapshots[self._snapshot] = self.clock.copy()
                    self._refs[self._snapshot] = 0
                sync = self._sync_of(alloc)
                replaced, counts = np.unique(sync[units], return_counts=True)
                for snapshot, count in zip(replaced.tolist(), counts.tolist()):
                    if snapshot >= 0:
                        self._refs[snapshot] -= count
                        if self._refs[snapshot] == 0 and snapshot != self._snapshot:
                            del self._refs[snapshot], self._snapshots[snapshot]
                sync[units] = self._snapshot
                self._refs[self._snapshot] += int(units.size)
                self._released = True


# while loops that never exit ---------------------------------------------------------------------------
def _feed(hasher, value) -> None:
    array = np.ascontiguousarray(value.materialize() if type(value) is Affine else value)
    hasher.update(f"{array.dtype.str}{array.shape}".encode())
    hasher.update(array.reshape(-1).view(np.uint8))


class SpinWatch:
    """Watches one execution of a ``while`` loop for an iteration that repeats the previous one.

    An iteration is a deterministic function of its carried values, the set of programs still
    running, and the values it reads from memory (loads and atomics, in order): nothing else runs
    while it does. If iteration k saw exactly what iteration k-1 saw, it wrote what k-1 wrote and
    carried out what k-1 carried out, so iteration k+1 starts where k started: the loop never exits.
    """

    def __init__(self, ex, op):
        self.ex = ex
        self.op = op
        self.hasher = None
        self.previous = None
        self.reads = 0
        self.previous_reads = 0
        ex.push_watch(self)

    def read(self, value) -> None:
        if self.hasher is not None:
            _feed(self.hasher, value)
            self.reads += 1

    def next_iteration(self, running, carried) -> None:
        """Closes the iteration that just ran (raising if it repeated the one before), opens the next."""
        if self.hasher is not None:
            signature = self.hasher.digest()
            if signature == self.previous:
                self._raise(running)
            self.previous = signature
        self.previous_reads, self.reads = self.reads, 0
        hasher = hashlib.blake2b(digest_size=20)
        hasher.update(b"all" if running is None else np.ascontiguousarray(running).view(np.uint8))
        for value in carried:
            _feed(hasher, value)
        self.hasher = hasher

    def close(self) -> None:
        self.ex.pop_watch(self)

    def _raise(self, running):
        ex = self.ex
        lanes = range(ex.batch) if running is None else np.flatnonzero(running)
        programs = [ex.program_of_lane(int(i)) for i in lanes]
        shown = ", ".join(str(p) for p in programs[:8])
        if len(programs) > 8:
            shown += f" and {len(programs) - 8} more"
        who = f"program {shown}" if len(programs) == 1 else f"programs {shown}"
        done, total = getattr(ex, "progress", (0, 0))
        if self.previous_reads:
            what = (f"deadlock in kernel '{ex.fn.name}': {who} spin{'s' if len(programs) == 1 else ''} forever in this "
                    "loop: an iteration read the same memory and carried the same values as the one before, and no "
                    "running program can change that memory")
            if getattr(ex, "program_order", False) and total > 1:
                pending = total - done - 1
                what += (f" (programs run one at a time here, in {'a shuffled' if ex.shuffled else 'launch'} order: "
                         f"{done} of {total} ha{'s' if done == 1 else 've'} finished, {pending} ha"
                         f"{'s' if pending == 1 else 've'} not started)")
            hint = ("a program may only wait for a program that is certain to run at the same time or earlier; a GPU "
                    "does not promise that programs launched later, or more than fit on it, run while it waits")
        else:
            what = (f"kernel '{ex.fn.name}' never leaves this while loop in {who}: an iteration carried the same "
                    "values as the one before and reads no memory, so the condition can never change")
            hint = "update a value the condition depends on inside the loop"
        message = render_location(self.op.loc, what, hint)
        raise DeadlockError(message, loc=self.op.loc, program_ids=programs, kernel=ex.fn.name)


def _recording(inner, affine: bool):
    def run(ex, op, args, active):
        out = inner(ex, op, args, active)
        if not (affine and out is NotImplemented):
            for watch in ex.watches:
                watch.read(out)
        return out

    return run


def watched_tables(exec_table: dict, affine_table: dict) -> tuple[dict, dict]:
    """Copies of the handler tables whose loads and atomics report the values they read."""
    checked, affine = dict(exec_table), dict(affine_table)
    for opcode in POINTER_READS:
        checked[opcode] = _recording(exec_table[opcode], False)
        if opcode in affine_table:
            affine[opcode] = _recording(affine_table[opcode], True)
    return checked, affine
