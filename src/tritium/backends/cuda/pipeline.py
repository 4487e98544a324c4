"""The software pipeliner: the loads that feed a loop's tensor-core dot run ``num_stages - 1``
iterations ahead, into a ring of ``num_stages`` shared-memory slots (docs/tensor-cores.md, "The
software pipeliner").

It runs after the layouts pass (``assign.py``), on the loads that pass gave a dot operand's tile
encoding (``#cuda.nvmma``: the load is the operand's only source, copied 16 bytes at a time, zero
where masked off). A ``for`` loop is pipelined when

- its step is a positive constant and its stage count ``S`` (``tl.range(num_stages=...)``, else the
  kernel's ``num_stages``) is at least 2;
- a ``dot`` at the top of its body reads one or two such loads, also at the top of the body (each
  gets a ring of its own; an operand copied once before the loop, or stored from registers, stays
  where it is);
- what those loads' pointers and masks are computed from (their *stage-0 slice*: the body's ops
  they depend on, and, for each value the loop carries that they read, what the loop yields for it)
  is pure, at the top of the body, and holds no load.

The rewrite, with ``n`` the trip count:

- before the loop, the slice for iterations ``0 .. S-2``: each load becomes ``async_copy`` into slot
  ``j`` of the dot's ring, masked off past the last iteration (``lower + j*step < upper``), then
  ``async_commit``;
- the loop carries, besides what its other ops need, the slice's carried values ``S - 1`` iterations
  ahead, and the slot it reads (``k mod S``). Its body starts with ``async_wait {pending=S-2}`` (tile
  ``k`` has landed, for every thread), then the slice for iteration ``k + S - 1`` copies into the slot
  of tile ``k - 1`` (which every thread finished reading before that barrier), masked off past the
  end, and commits; the dot then reads tile ``k`` through ``shared_slot`` while those copies fly;
- after the loop, ``async_wait {pending=0}``: the copies past the end (which read nothing) are done
  before the program goes on.

The ops of the slice that the rest of the body also needs stay in it, at the loop's own pace; a
carried value that both need is carried twice (at its pace and ahead).

A dot the backend says may run asynchronously (wgmma) and whose result only feeds the next
iteration's accumulator is left running: the body waits for it with ``dot_wait {pending=1}`` (the dot
of the iteration before has finished, in this warpgroup; a barrier covers the others when there are
several) and only then issues the next tile's copies, into the slot that dot read; after the loop,
``dot_wait {pending=0}`` gives the code after it the finished accumulator.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from ...compiler.ir import types as T
from ...compiler.ir.builder import with_defaults
from ...compiler.ir.encodings import SharedTile
from ...compiler.ir.ops import Function, Operation, Region, Value
from ...compiler.ir.spec import is_pure
from ...compiler.passes.rewriting import NO_CONSTANT, Replacements, constant_value, new_op, used_ids, values_read


def pipeline_loops(fn: Function, num_stages: int, num_warps: int = 4, asynchronous=None) -> int:
    """Pipelines the eligible loops of ``fn`` (see the module); ``num_stages``: the kernel's stage
    count, which a loop's own ``num_stages`` overrides; ``asynchronous(dot)``: the dot may run while
    the loop goes on (wgmma; None: no dot may). Returns how many loops it rewrote."""
    used = used_ids(fn.body)
    rings = [0]
    return _pipeline_region(fn.body, num_stages, used, rings, _Context(num_warps, asynchronous or (lambda dot: False)))


class _Context:
    def __init__(self, num_warps: int, asynchronous):
        self.num_warps, self.asynchronous = num_warps, asynchronous


def _pipeline_region(region: Region, num_stages: int, used: set[int], rings: list, context: _Context) -> int:
    count = 0
    ops: list[Operation] = []
    for op in region.ops:
        for inner in op.regions:
            count += _pipeline_region(inner, num_stages, used, rings, context)
        if op.opcode == "for":
            stages = op.attrs.get("num_stages")
            plan = _Plan.of(op, num_stages if stages is None else stages, used)
            if plan is not None:
                ops.extend(plan.rewrite(rings, context))
                count += 1
                continue
        ops.append(op)
    region.ops = ops
    return count


def _constant(value, type_, loc) -> Value:
    return new_op("constant", [], type_, {"value": value}, loc).results[0]


class _Emitter:
    """New ops appended to a list, each stamped with one location."""

    def __init__(self, loc):
        self.ops: list[Operation] = []
        self.loc = loc

    def op(self, opcode: str, operands, type_=None, attrs=None, names=None) -> Optional[Value]:
        """A new op of ``opcode`` (of one result of type ``type_``, or none); ``names``: its operand
        slots, where the spec's order does not say (an optional operand given)."""
        made = Operation(opcode, operands, [type_] if type_ is not None else [], with_defaults(opcode, attrs), (),
                         self.loc, names)
        self.ops.append(made)
        return made.results[0] if made.results else None

    def constant(self, value, type_) -> Value:
        made = _constant(value, type_, self.loc)
        self.ops.append(made.owner)
        return made


class _Plan:
    """One loop's pipelining: what runs ahead (the slice), what is carried at which pace."""

    def __init__(self, loop: Operation, stages: int, dots: list, loads: list, slice_ops: list, ahead: list,
                 pace: list, kept: list):
        self.loop, self.stages, self.dots, self.loads = loop, stages, dots, loads
        self.slice_ops = slice_ops  # the stage-0 slice, in body order, the pipelined loads among them
        self.ahead = ahead  # indices of the carried values the slice reads (run S-1 iterations ahead)
        self.pace = pace  # indices of the carried values the rest of the body (or the code after) reads
        self.kept = kept  # the body's ops that stay, at the loop's pace (loads excluded)

    @classmethod
    def of(cls, loop: Operation, stages: int, used: set[int]) -> Optional[_Plan]:
        if stages < 2:
            return None
        step = constant_value(loop.operands[2])
        if step is NO_CONSTANT or not isinstance(step, int) or step <= 0:
            return None
        body = loop.regions[0]
        terminator = body.terminator
        if terminator is None:
            return None
        top = {id(op) for op in body.ops}
        copied = {op.results[0].id: op for op in body.ops
                  if op.opcode == "load" and isinstance(op.results[0].encoding, SharedTile)}
        dots, loads = [], []
        for op in body.ops:
            if op.opcode != "dot":
                continue
            found = [copied[op.operand(name).id] for name in ("a", "b") if op.operand(name).id in copied]
            if found:
                dots.append(op)
                loads.extend(load for load in found if all(load is not seen for seen in loads))
        if not dots:
            return None
        carried = {arg.id: i for i, arg in enumerate(body.args[1:])}

        # the stage-0 slice: what the loads' pointers and masks come from
        in_slice: set[int] = {id(load) for load in loads}
        ahead: set[int] = set()

        def into_slice(owner: Operation, value: Value) -> Optional[bool]:
            if id(owner) not in top or id(owner) in in_slice:
                return False  # defined before the loop (a nested region's value is not visible here), or seen
            if not is_pure(owner) or owner.regions or owner.opcode in ("load", "dot"):
                return None
            in_slice.add(id(owner))
            return True

        pointers = [v for load in loads for v in (load.operand("pointer"), load.operand("mask")) if v is not None]
        if not _walk_back(pointers, carried, terminator, ahead, into_slice):
            return None

        # what the rest of the body needs at its own pace: every op outside the slice, the slice's ops
        # they read, and the carried values those read (with what the loop yields for them)
        pace: set[int] = {i for i in range(len(body.args) - 1) if i not in ahead}
        pace.update(i for i in ahead if loop.results[i].id in used)
        needed: set[int] = set()
        load_results = {load.results[0].id for load in loads}

        def at_pace(owner: Operation, value: Value) -> bool:
            # a load's result is read by its dot alone (the layouts pass saw to it): it becomes a slot
            if value.id in load_results or id(owner) not in in_slice or id(owner) in needed:
                return False
            needed.add(id(owner))
            return True

        rest = [v for op in body.ops if id(op) not in in_slice and op is not terminator for v in values_read(op)]
        _walk_back(rest + [terminator.operands[i] for i in pace], carried, terminator, pace, at_pace)
        slice_ops = [op for op in body.ops if id(op) in in_slice]
        kept = [op for op in body.ops if op is not terminator and (id(op) not in in_slice or id(op) in needed)]
        return cls(loop, stages, dots, loads, slice_ops, sorted(ahead), sorted(pace), kept)

    # the rewrite -------------------------------------------------------------------------------------
    def asynchronous_dots(self, context: _Context) -> dict:
        """The dots that may run on while the loop goes on, each with the index of the carried value it
        accumulates into: its accumulator is that value, and it reads the loop's result only through
        the yield (an fp32 accumulator, the dot's own type)."""
        body = self.loop.regions[0]
        terminator = body.terminator
        readers = Counter(v.id for op in body.ops for v in values_read(op))
        found = {}
        copied = {load.results[0].id for load in self.loads}
        for dot in self.dots:
            result = dot.results[0]
            if not context.asynchronous(dot) or readers.get(result.id) != 1 or not result.type.scalar.is_fp32():
                continue
            if not all(dot.operand(name).id in copied for name in ("a", "b")):
                continue  # an operand stored from registers is stored again by the next iteration
            for i in self.pace:
                if terminator.operands[i] is result and dot.operand("accumulator") is body.args[1 + i]:
                    found[id(dot)] = i
        return found

    def rewrite(self, rings: list, context: _Context) -> list[Operation]:
        """The ops that take the loop's place: the prologue, the loop, the final wait. A dot that may run
        on (``asynchronous_dots``) is waited for down to the one just issued (``dot_wait {pending=1}``)
        before the next tile's copies overwrite the slot the one before it read (behind a barrier when
        several warpgroups read the ring), and down to none after the loop."""
        loop, stages = self.loop, self.stages
        body = loop.regions[0]
        terminator = body.terminator
        lower, upper, step = loop.operands[:3]
        iv = body.args[0]
        index_type = iv.type
        inits = loop.operands[3:]
        loc = loop.loc
        ring_of = {}  # a load's result -> its ring
        for load in self.loads:
            ring_of[load.results[0].id] = rings[0]
            rings[0] += 1
        owner_dot = {}
        for dot in self.dots:
            owner_dot[dot.operand("a").id] = (dot, "a")
            owner_dot[dot.operand("b").id] = (dot, "b")

        # the prologue: the slice for iterations 0 .. S-2
        before = _Emitter(loc)
        state = {i: inits[i] for i in self.ahead}
        step_value = constant_value(step)
        for j in range(stages - 1):
            at = before.op("add", [lower, before.constant(j * step_value, index_type)], index_type) if j else lower
            live = before.op("cmp", [at, upper], T.int1, {"predicate": "lt"})
            slot = before.constant(j, T.int32)
            state = self._issue(before, at, state, live, slot, ring_of, owner_dot)
            before.op("async_commit", [])

        # the loop: its carried values at pace, those ahead, the slot it reads
        ahead_args = [Value(body.args[1 + i].type) for i in self.ahead]
        for arg, i in zip(ahead_args, self.ahead):
            arg.encoding = body.args[1 + i].encoding
        read = Value(T.int32)
        inside = _Emitter(loc)
        inside.op("async_wait", [], attrs={"pending": stages - 2})
        one = inside.constant(1, T.int32)
        count = inside.constant(stages, T.int32)
        zero = inside.constant(0, T.int32)
        shifted = inside.op("add", [read, inside.constant(stages - 1, T.int32)], T.int32)
        wraps = inside.op("cmp", [shifted, count], T.int1, {"predicate": "ge"})
        write = inside.op("select", [wraps, inside.op("sub", [shifted, count], T.int32), shifted], T.int32)
        asynchronous = self.asynchronous_dots(context)
        refill = _Emitter(loc) if asynchronous else inside  # the next tile's copies: after the waits, or now
        waited = {}
        for dot in self.dots:
            if id(dot) in asynchronous:
                waited[asynchronous[id(dot)]] = refill.op("dot_wait", [dot.results[0]], dot.results[0].type,
                                                          {"pending": 1})
        if asynchronous and context.num_warps > 4:  # another warpgroup's dot may still read the slot
            refill.op("barrier", [])
        later = refill.op("add", [iv, refill.constant((stages - 1) * step_value, index_type)], index_type)
        live = refill.op("cmp", [later, upper], T.int1, {"predicate": "lt"})
        advanced = self._issue(refill, later, dict(zip(self.ahead, ahead_args)), live, write, ring_of, owner_dot)
        refill.op("async_commit", [])
        following = inside.op("add", [read, one], T.int32)
        wrapped = inside.op("cmp", [following, count], T.int1, {"predicate": "eq"})
        next_read = inside.op("select", [wrapped, zero, following], T.int32)
        replacements = Replacements()
        for load in self.loads:
            dot, name = owner_dot[load.results[0].id]
            tile = load.results[0]
            slot_value = inside.op("shared_slot", [read], tile.type,
                                   {"ring": ring_of[tile.id], "stages": stages, "operand": name,
                                    "shape": tuple(tile.type.shape), "dtype": tile.type.scalar})
            slot_value.encoding = tile.encoding
            replacements.replace(tile, slot_value)
        for op in self.kept:
            replacements.apply(op)
            for region in op.regions:
                for inner in region.walk():
                    replacements.apply(inner)

        # the loop op, in place: its results at pace stay the values the code after it reads
        pace_yields = [waited.get(i) or replacements.resolve(terminator.operands[i]) for i in self.pace]
        terminator.operands = pace_yields + [advanced[i] for i in self.ahead] + [next_read]
        terminator.operand_names = ("values",) * len(terminator.operands)
        body.args = [iv] + [body.args[1 + i] for i in self.pace] + ahead_args + [read]
        body.ops = inside.ops + self.kept + (refill.ops if asynchronous else []) + [terminator]
        loop.operands = [lower, upper, step] + [inits[i] for i in self.pace] + [state[i] for i in self.ahead] + \
            [before.constant(0, T.int32)]
        loop.operand_names = ("lower", "upper", "step") + ("inits",) * (len(loop.operands) - 3)
        results = [loop.results[i] for i in self.pace]
        extra = [Value(v.type, loop) for v in ahead_args + [read]]
        after = _Emitter(loc)
        for position, i in enumerate(self.pace):
            if i in waited:  # the code after the loop reads the accumulator once its dots are done
                final = results[position]
                running = Value(final.type, loop)
                running.encoding = final.encoding
                results[position] = running
                wait = after.op("dot_wait", [running], final.type, {"pending": 0}).owner
                wait.results = [final]
                final.owner = wait
        loop.results = results + extra
        after.op("async_wait", [], attrs={"pending": 0})
        return before.ops + [loop] + after.ops

    def _issue(self, emit: _Emitter, at: Value, state: dict, live: Value, slot: Value, ring_of, owner_dot) -> dict:
        """The slice for the iteration whose induction variable is ``at``, carried values from
        ``state`` (index -> value); its loads as copies into ``slot``, off where ``live`` is false.
        Returns the carried values it yields (index -> value)."""
        body = self.loop.regions[0]
        mapping = {body.args[0].id: at}
        mapping.update((body.args[1 + i].id, value) for i, value in state.items())

        def mapped(v: Value) -> Value:
            return mapping.get(v.id, v)

        for op in self.slice_ops:
            if op.opcode != "load":
                clone = Operation(op.opcode, [mapped(v) for v in op.operands], [r.type for r in op.results],
                                  dict(op.attrs), (), op.loc, op.operand_names)
                for old, new in zip(op.results, clone.results):
                    new.encoding = old.encoding
                    mapping[old.id] = new
                emit.ops.append(clone)
                continue
            _, name = owner_dot[op.results[0].id]
            pointer, mask = mapped(op.operand("pointer")), op.operand("mask")
            shape = tuple(op.results[0].type.shape)
            live_lanes = emit.op("splat", [live], T.block_type(T.int1, shape))
            mask = live_lanes if mask is None else emit.op("and", [mapped(mask), live_lanes], live_lanes.type)
            emit.op("async_copy", [pointer, slot, mask],
                    attrs={"ring": ring_of[op.results[0].id], "stages": self.stages, "operand": name},
                    names=("pointer", "slot", "mask"))
        terminator = body.terminator
        return {i: mapped(terminator.operands[i]) for i in self.ahead}


def _walk_back(start, carried: dict, terminator: Operation, reached: set, take) -> bool:
    """Walks back through a loop body from the values ``start``: a carried value (``carried``: its
    argument's id -> index) adds its index to ``reached`` and goes on from what the loop yields for it;
    a result goes to ``take(op, value)``, which says to go on from the op's operands (True), to stop
    there (False) or to give up (None: the walk returns False)."""
    work = list(start)
    while work:
        value = work.pop()
        if value.id in carried:
            i = carried[value.id]
            if i not in reached:
                reached.add(i)
                work.append(terminator.operands[i])
            continue
        if value.owner is None:  # the induction variable, or an argument of the kernel
            continue
        go = take(value.owner, value)
        if go is None:
            return False
        if go:
            work.extend(value.owner.operands)
    return True
