"""The layouts pass: the layouts of the values a dot touches, decided before emission and written on
them as IR encodings (``Value.encoding``, ``#cuda.<kind><...>``), which the code generator reads
instead of choosing (docs/tensor-cores.md, "Layouts before emission").

For each ``dot`` it places

- the result: the tensor cores' layout (``mma.Plan.layout``) where a plan applies; on the FMA path
  the accumulator's layout where the accumulator has one, else the default;
- the operands, and the loads feeding them (through hints, views and elementwise ops of one block
  operand): the layout each has once lowered (a load its access layout, an elementwise value the
  layout of its first operand that has one). A value every reader recomputes in its own layout
  (index arithmetic, a splat of zeros) has no layout and gets no encoding;
- a load that is the only source of an fp16/bf16 tensor-core operand and can be copied 16 bytes at
  a time: the operand tile's shared encoding (``#cuda.nvmma<swizzle=W>``), so that it is lowered as
  ``cp.async`` copies straight into the dot's tile (``async_copy.py``); debug mode's variant, whose
  accesses are bounds-checked, keeps register loads;
- the values a ``for`` carries for it (an accumulator the dot reads from the loop or yields to it):
  the carried layout (``Choices._carried_layouts``: the initial value's, else the yielding dot's,
  else the first access through the value), on the initial value, the body's argument, the loop's
  result and the yielded value.

Every other value keeps being chosen by the code generator as it lowers. The rules are the code
generator's own, shared through ``Choices``: the pass applies them to the IR ahead of emission,
with ``layout_of`` answering what the generator's answers once a value is lowered. A value whose
layout the pass does not model (one made by an op outside those rules, a ``while`` or ``if``
result) is left unplaced, and what depends on it too. The code generator checks that every value
the pass placed is lowered in that layout (``codegen._Distributed``).
"""
from __future__ import annotations

from functools import cached_property
from typing import Optional

from ...compiler.analysis.axis_info import analyze_axis_info
from ...compiler.ir import types as T
from ...compiler.ir.encodings import SharedTile
from ...compiler.ir.ops import Function, Operation, Region, Value
from . import layouts as L
from . import mma
from .values import _is_block, _shape

# ops whose block result has no layout of its own: each reader evaluates it in the layout it needs
RECOMPUTED = frozenset({"arange", "constant", "splat", "broadcast", "reshape", "permute", "join"})
# ops a dot operand is followed back through to the load that feeds it
VIEWS = frozenset({"hint", "permute", "reshape", "broadcast"})


class Choices:
    """The rules that choose layouts, shared by the code generator (which applies them as it lowers,
    ``layout_of`` reading what it has lowered) and the layouts pass (which applies them before,
    ``layout_of`` predicting). Needs ``num_warps``, ``capability``, ``axis`` (the axis analysis),
    ``lane_rules``, ``fn`` and ``layout_of(value)``; ``assigned_layout(value)`` is the pass's decision, where
    the generator reads one."""

    wgmma = False  # Hopper's wgmma allowed for the dots (CUDAOptions.wgmma)

    def assigned_layout(self, v: Value) -> Optional[L.Layout]:
        return None

    def default_layout(self, shape) -> L.Layout:
        return L.default_layout(tuple(shape), self.num_warps)

    def some_layout(self, v: Value) -> L.Layout:
        return self.layout_of(v) or self.default_layout(_shape(v.type))

    def access_layout(self, pointer: Value, mask: Optional[Value]) -> L.Layout:
        """The blocked layout of a load or store (``layouts.access_layout``)."""
        return L.access_layout(pointer, mask, self.axis, self.num_warps)

    # dot -------------------------------------------------------------------------------------------
    def dot_plan(self, op: Operation, layout: Optional[L.Layout] = None) -> Optional[mma.Plan]:
        """The tensor-core plan of dot ``op``, or None (the FMA path); ``layout``: its result's
        assigned layout, from which the plan reads its warp grid. A dot of a chain (``chained_dots``)
        splits its warps along M alone, so the next dot reads its result as A from registers."""
        return mma.plan_of(op, self.num_warps, self.capability, layout, self.wgmma, self.b_kmajor(op),
                           id(op) in self.chained)

    @cached_property
    def chained(self) -> set:
        """The ids of the dots of a chain (``chained_dots``) of ``self.fn``."""
        return chained_dots(self.fn, self.lane_rules, self.num_warps)

    def tile_encoding(self, v: Value) -> Optional[SharedTile]:
        """The shared tile a load copies ``v`` into (or a ring slot holds it in), or None."""
        return v.encoding if isinstance(v.encoding, SharedTile) else None

    def b_kmajor(self, op: Operation) -> bool:
        """Dot ``op``'s B is stored N x K (``mma.Plan.b_kmajor``): its tile says so, or it is a load
        whose runs of 16 bytes lie along K (attention's K^T, read with K contiguous)."""
        from .async_copy import copy_run

        b = op.operand("b")
        tile = self.tile_encoding(b)
        if tile is not None:
            return tile.transposed
        load = b.owner
        if load is None or load.opcode != "load" or not _is_block(b) or len(_shape(b.type)) != 2:
            return False
        item = max(1, b.type.scalar.primitive_bitwidth // 8)
        layout = self.access_layout(load.operand("pointer"), load.operand("mask"))
        return copy_run(layout, _shape(b.type), item, dim=0) is not None

    def dot_result_layout(self, op: Operation) -> L.Layout:
        """The layout of dot ``op``'s result: the tensor cores' where they apply, else the
        accumulator's where it has one, else the default."""
        plan = self.dot_plan(op)
        if plan is not None:
            return plan.layout
        return self.layout_of(op.operand("accumulator")) or self.default_layout(_shape(op.results[0].type))

    def dot_layout(self, v: Value) -> Optional[L.Layout]:
        """The layout a dot gives ``v``, known before the dot is lowered: ``v`` is the dot's result or
        an elementwise op on it (``acc + tl.dot(a, b)``); None where no dot decides."""
        op = v.owner
        if op is None:
            return None
        if op.opcode == "dot":
            plan = self.dot_plan(op)
            return plan.layout if plan is not None else None
        if op.opcode in self.lane_rules:
            for operand in op.operands:
                if _is_block(operand) and operand.owner is not None and operand.owner.opcode == "dot":
                    plan = self.dot_plan(operand.owner)
                    return plan.layout if plan is not None else None
        return None

    # carried values --------------------------------------------------------------------------------
    def _carried_layouts(self, values, yielded=(), uses=(), placed=()) -> list:
        """The layout each carried value takes (None for a scalar): the one the layouts pass gave
        ``placed[i]`` (the region argument that holds it), where it gave one; else
        ``_carried_layout``."""
        out = []
        for i, v in enumerate(values):
            if not _is_block(v):
                out.append(None)
                continue
            layout = self.assigned_layout(placed[i]) if i < len(placed) else None
            out.append(layout or self._carried_layout(v, yielded[i] if i < len(yielded) else None,
                                                      uses[i] if i < len(uses) else ()))
        return out

    def _carried_layout(self, v: Value, yielded: Optional[Value], uses) -> L.Layout:
        """Its initial value's layout; where that is recomputed (a constant: ``tl.zeros``; a block of
        pointers), the layout a dot gives what the loop yields for it, if one does, so that a K loop's
        accumulator stays in the tensor cores' registers; else the layout of the first load or store
        through it in the loop (``uses``: the pairs (name, region) under which the loop's regions see
        it), so that pointers advanced by each iteration are not converted; else the default."""
        layout = self.layout_of(v)
        if layout is None and yielded is not None:
            layout = self.dot_layout(yielded)
        for name, region in (uses if layout is None else ()):
            layout = self._access_layout_through(name, region)
            if layout is not None:
                break
        if layout is None or layout.shape != _shape(v.type):
            layout = self.some_layout(v)
        return layout

    def _access_layout_through(self, pointer: Value, region: Region) -> Optional[L.Layout]:
        """The access layout of the first load or store in ``region`` whose pointer is ``pointer``."""
        if not isinstance(pointer.type, T.block_type) or not isinstance(pointer.type.scalar, T.pointer_type):
            return None
        for op in region.walk():
            if op.opcode in ("load", "store", "async_copy") and op.operand("pointer") is pointer:
                return self.access_layout(pointer, op.operand("mask"))
        return None


# the pass ----------------------------------------------------------------------------------------------
class _Unknown(Exception):
    """A value whose layout the pass does not model: left to the code generator."""


_UNKNOWN = object()


class _Assigner(Choices):
    def __init__(self, fn: Function, num_warps: int, capability: int, rules, lane_rules, async_copies: bool = True,
                 wgmma: bool = False):
        self.fn = fn
        self.async_copies = async_copies
        self.wgmma = wgmma
        self.readers: dict[int, list] = {}  # value id -> the ops that read it, once per operand
        for op in fn.walk():
            for operand in op.operands:
                self.readers.setdefault(operand.id, []).append(op)
        self.num_warps = num_warps
        self.capability = capability
        self.axis = analyze_axis_info(fn)
        self.rules = rules  # opcode -> the code generator's own rule
        self.lane_rules = lane_rules  # the elementwise opcodes
        self.known: dict[int, object] = {}  # value id -> its layout once lowered, None, or _UNKNOWN
        self.carriers: dict[int, tuple[Operation, int]] = {}  # a for body's argument -> (the for, its index)
        self.following: dict[int, L.Layout] = {}  # a for body's argument -> the layout it takes from its yield
        for op in fn.walk():
            if op.opcode == "for":
                for i, arg in enumerate(op.regions[0].args[1:]):
                    self.carriers[arg.id] = (op, i)

    def layout_of(self, v: Value) -> Optional[L.Layout]:
        """The layout ``v`` has once the code generator has lowered it; None where it is recomputed
        by its readers. Raises _Unknown where the pass does not model it."""
        if not _is_block(v):
            return None
        if v.id not in self.known:
            try:
                self.known[v.id] = self._lowered(v)
            except _Unknown:
                self.known[v.id] = _UNKNOWN
        found = self.known[v.id]
        if found is _UNKNOWN:
            raise _Unknown(v)
        return found

    def _lowered(self, v: Value) -> Optional[L.Layout]:
        op = v.owner
        if op is None:
            if v.id not in self.carriers:
                raise _Unknown(v)
            return self._carried(*self.carriers[v.id])
        opcode = op.opcode
        if opcode == "load":
            return self.access_layout(op.operand("pointer"), op.operand("mask"))
        if opcode in RECOMPUTED:
            return None
        if opcode == "hint":
            return self.layout_of(op.operands[0])
        if opcode == "dot":
            return self.dot_result_layout(op)
        if opcode == "reduce":  # cross_lane.lower_reduce: its operand's layout, sliced
            return L.sliced(self.some_layout(op.operands[0]), op.attrs["axis"])
        if opcode == "for":
            return self._carried(op, next(i for i, r in enumerate(op.results) if r is v))
        if opcode in self.lane_rules and opcode not in self.rules:  # lower_lanes
            blocks = [o for o in op.operands if _is_block(o)]
            return next((layout for layout in (self.layout_of(o) for o in blocks) if layout is not None), None)
        raise _Unknown(v)

    def _carried(self, op: Operation, i: int) -> L.Layout:
        """The layout of carried value ``i`` of for ``op``, as ``lower_for`` chooses it: the one
        ``place_following`` gave it, else by ``Choices._carried_layout``'s rule."""
        body = op.regions[0]
        if body.args[1 + i].id in self.following:
            return self.following[body.args[1 + i].id]
        yielded = body.terminator.operands if body.terminator is not None else ()
        return self._carried_layout(op.operands[3 + i], yielded[i] if i < len(yielded) else None,
                                    [(body.args[1 + i], body)])

    # what is placed ----------------------------------------------------------------------------------
    def place(self, v: Value) -> None:
        try:
            layout = self.layout_of(v)
        except _Unknown:
            return
        if layout is not None:
            v.encoding = layout.encoding()

    def place_dot(self, op: Operation) -> None:
        for v in (op.results[0], *op.operands):
            self.place(v)
            if v.id in self.carriers:
                self.place_carried(*self.carriers[v.id])
        for operand in (op.operand("a"), op.operand("b")):
            load = self._feeding_load(operand)
            if load is not None:
                self.place(load)
        if self.async_copies:
            for name in ("a", "b"):
                tile = self._copied_tile(op, name)
                if tile is not None:
                    op.operand(name).encoding = tile

    def _copied_tile(self, op: Operation, name: str) -> Optional[SharedTile]:
        """The tile encoding of dot ``op``'s operand ``name`` when a load can copy it there with
        ``cp.async`` (see the module's docstring), else None."""
        from .async_copy import copy_run

        value = op.operand(name)
        load = value.owner
        if load is None or load.opcode != "load" or load.attrs.get("volatile"):
            return None
        plan = self._tile_plan(op)
        if plan is None or plan.batched or plan.parts != 1 or plan.instruction.kind not in ("fp16", "bf16"):
            return None
        # every reader is a dot taking it as the same operand in the same tile (a Q two loops multiply by)
        for reader in self.readers.get(value.id, ()):
            other = self._tile_plan(reader) if reader.opcode == "dot" else None
            if other is None or reader.operand(name) is not value or \
                    reader.operand("b" if name == "a" else "a") is value or \
                    _tile_shape(other, name) != _tile_shape(plan, name):
                return None
        width = plan.a_swizzle if name == "a" else plan.b_swizzle
        other = load.operand("other")
        if not width or (other is not None and not _is_zero(other)):
            return None
        transposed = name == "b" and plan.b_kmajor  # K, the dimension before the last, contiguous
        pointer, mask = load.operand("pointer"), load.operand("mask")
        shape = _shape(pointer.type)
        if copy_run(self.access_layout(pointer, mask), shape, plan.item, len(shape) - (2 if transposed else 1)) is None:
            return None
        return SharedTile(width, transposed)

    def _tile_plan(self, op: Operation) -> Optional[mma.Plan]:
        """Dot ``op``'s plan, its result placed; None where the pass does not place the result (the
        dot then stores its operands itself)."""
        try:
            return self.dot_plan(op, self.layout_of(op.results[0]))
        except _Unknown:
            return None

    def place_carried(self, op: Operation, i: int) -> None:
        body = op.regions[0]
        values = [op.operands[3 + i], body.args[1 + i], op.results[i]]
        if body.terminator is not None:
            values.append(body.terminator.operands[i])
        for v in values:
            self.place(v)

    def place_following(self, op: Operation) -> None:
        """The values for ``op`` carries without a layout of their own (their initial values have none:
        ``tl.zeros``, a running maximum's ``-inf``) and that the pass has not placed take the layouts
        of what the loop yields for them, found with those values taken to have none (attention's
        running maximum and sum: the slice of the score dot's layout its row reductions give), where
        the yields then keep those layouts; the others keep the code generator's rule."""
        body = op.regions[0]
        candidates = []
        for i, arg in enumerate(body.args[1:]):
            if not _is_block(arg) or arg.encoding is not None or arg.id in self.following:
                continue
            try:
                if self.layout_of(op.operands[3 + i]) is None:
                    candidates.append(i)
            except _Unknown:
                continue
        if not candidates:
            return
        saved = dict(self.known)
        for i in candidates:
            self.known[body.args[1 + i].id] = None
        guesses = {}
        for i in candidates:
            try:
                guess = self.layout_of(body.terminator.operands[i])
            except _Unknown:
                continue
            if guess is not None and guess.shape == _shape(body.args[1 + i].type):
                guesses[i] = guess
        while guesses:  # keep the guesses whose yields keep them, given the others
            self.known = {}
            self.following.update((body.args[1 + i].id, guess) for i, guess in guesses.items())
            wrong = []
            for i, guess in guesses.items():
                try:
                    if self.layout_of(body.terminator.operands[i]) != guess:
                        wrong.append(i)
                except _Unknown:
                    wrong.append(i)
            if not wrong:
                for i in guesses:
                    self.place_carried(op, i)
                return
            for i in wrong:
                del guesses[i]
            for i in wrong:
                del self.following[body.args[1 + i].id]
        self.known = saved

    def _feeding_load(self, v: Value) -> Optional[Value]:
        """The load ``v`` is read from through hints, views and elementwise ops of one block operand."""
        while v.owner is not None:
            op = v.owner
            if op.opcode == "load":
                return v
            blocks = [o for o in op.operands if _is_block(o)]
            through = op.opcode in VIEWS or (op.opcode in self.lane_rules and op.opcode not in self.rules)
            if not through or len(blocks) != 1:
                return None
            v = blocks[0]
        return None


CHAIN_STEPS = 32  # ops followed back from a dot's A to the dot that made it


def chained_dots(fn: Function, lane_rules, num_warps: int) -> set:
    """The ids of the 16-bit dots whose A is made from another dot's result by elementwise ops (and
    views, in the same region; attention's P = exp2(Q K^T ...) for P V), and of those other dots,
    where M holds a 16-row tile for every warp: their plans split the warps along M alone, so that
    the A fragments of the second are the first's accumulator registers."""
    found: set = set()
    for op in fn.walk():
        if op.opcode != "dot" or not _is_block(op.operand("a")):
            continue
        a = op.operand("a")
        if a.type.scalar.primitive_bitwidth != 16 or len(_shape(a.type)) != 2 or _shape(a.type)[0] < 16 * num_warps:
            continue
        work, seen, sources = [a], set(), []
        while work and len(seen) < CHAIN_STEPS:
            v = work.pop()
            owner = v.owner
            if owner is None or v.id in seen:
                continue
            seen.add(v.id)
            if owner.opcode == "dot":
                sources.append(owner)
            elif owner.opcode in lane_rules or owner.opcode in VIEWS:
                work.extend(o for o in owner.operands if _is_block(o))
        if sources:
            found.add(id(op))
            found.update(id(source) for source in sources)
    return found


def _made_by_a_dot(v: Value, lane_rules) -> bool:
    """``v`` is a dot's result or an elementwise op on one (what ``dot_layout`` looks at)."""
    op = v.owner
    if op is None:
        return False
    if op.opcode == "dot":
        return True
    return op.opcode in lane_rules and any(_is_block(o) and o.owner is not None and o.owner.opcode == "dot"
                                           for o in op.operands)


def _tile_shape(plan: mma.Plan, name: str) -> tuple:
    """What places the elements of operand ``name``'s tile (``mma.a_offset`` / ``b_offset``)."""
    if name == "a":
        return plan.m, plan.k, plan.item, plan.a_swizzle, plan.a_row
    return plan.n, plan.k, plan.item, plan.b_swizzle, plan.b_trans, plan.b_row


def _is_zero(v: Value) -> bool:
    """``v`` is a constant +0 (or a splat of one, viewed in any shape): what a copy that reads nothing
    fills in."""
    op = v.owner
    while op is not None and op.opcode in ("splat", "broadcast", "reshape", "permute"):
        op = op.operands[0].owner
    if op is None or op.opcode != "constant":
        return False
    value = op.attrs.get("value")
    return value == 0 and str(value)[0] != "-"


def clear_encodings(fn: Function) -> None:
    """Drops every encoding of ``fn``'s values (an earlier lowering's, another backend's)."""
    for op in fn.walk():
        for r in op.results:
            r.encoding = None
        for region in op.regions:
            for a in region.args:
                a.encoding = None


def assign_layouts(fn: Function, num_warps: int, capability: int, async_copies: bool = True,
                   wgmma: bool = False) -> None:
    """Writes the layouts of the values ``fn``'s dots touch on them (see the module's docstring),
    for ``num_warps`` warps on compute capability ``capability``; every other value is left
    without an encoding. ``async_copies=False``: no load is lowered as ``cp.async``; ``wgmma``:
    Hopper's wgmma allowed."""
    from .codegen import Codegen

    clear_encodings(fn)
    assigner = _Assigner(fn, num_warps, capability, Codegen.rules, Codegen.lane_rules, async_copies, wgmma)
    for op in fn.walk():
        if op.opcode == "dot":
            assigner.place_dot(op)
        elif op.opcode == "for" and op.regions[0].terminator is not None:
            for i, yielded in enumerate(op.regions[0].terminator.operands):
                if _is_block(yielded) and _made_by_a_dot(yielded, Codegen.lane_rules):
                    assigner.place_carried(op, i)
    # what else a loop with a dot carries (attention's running maximum and sum) follows its yield
    for op in fn.walk():
        if op.opcode == "for" and op.regions[0].terminator is not None and \
                any(inner.opcode == "dot" for inner in op.regions[0].ops):
            assigner.place_following(op)
