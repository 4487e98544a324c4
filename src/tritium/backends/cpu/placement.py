"""The CPU backend's placement stage: where each block value of a kernel lives, written on the
value as its encoding (``compiler/ir/encodings.py``, ``#cpu.<where>``) before lowering.

A block value is never one LLVM vector (docs/cpu-backend.md, "Placement"). It is

- ``lazy``: an expression of its operands, evaluated lane by lane inside the loop of each op that
  reads it (index arithmetic, splats, broadcasts, elementwise chains);
- ``buffer``: written into a 64-byte aligned buffer where it is defined (loads, reductions, scans,
  dot, atomics, loop-carried and ``if`` results, and an elementwise value used twice that is not
  index arithmetic, so that it is computed once);
- ``in_store``: an elementwise value every use of which is inside the value one store writes: each
  lane is computed once, in the store's loop;
- ``read_in_store``: a load among such values, read inside the store's loop (one pass over memory);
- ``packed<form>``: a load whose only reader is a dot that would convert it on a copy (fp16, bf16,
  fp8 or int8 widened, fp32 truncated to tf32): the load writes its buffer converted.

``place(fn)`` writes the encodings; the code generator reads them (``Codegen``) and ``tritium ir
--stage layouts`` prints them.
"""
from __future__ import annotations

from ...compiler.ir import types as T
from ...compiler.ir.encodings import Placement
from ...compiler.ir.ops import Function, Operation, Region, Value
from ...compiler.ir.spec import COPYING_OPCODES, has_effects
from ..llvm import scalar as lanes
from .debug_checks import checked_code

LAZY, BUFFER, IN_STORE, READ_IN_STORE = (Placement(w) for w in ("lazy", "buffer", "in_store", "read_in_store"))


def _numel(ty) -> int:
    count = 1
    for n in ty.shape:
        count *= n
    return count


def count_uses(fn: Function) -> dict[int, int]:
    """Value id -> how often it is read, a read inside a loop or branch (deeper than the value's
    definition) counting twice."""
    uses: dict[int, int] = {}

    def walk(region: Region, depth: int, defined_depth: dict) -> None:
        for arg in region.args:
            defined_depth[arg.id] = depth
        for op in region.ops:
            for operand in op.operands:
                weight = 1 if defined_depth.get(operand.id, 0) == depth else 2
                uses[operand.id] = uses.get(operand.id, 0) + weight
            for inner in op.regions:
                walk(inner, depth + 1, defined_depth)
            for r in op.results:
                defined_depth[r.id] = depth

    walk(fn.body, 0, {})
    return uses


def packed_text(form) -> str:
    """The ``packed<...>`` parameter of a dot operand's form ``(type, tf32)`` (``dot.packed_form``)."""
    work, tf32 = form
    return "tf32" if tf32 else work.ir_name


def held_form(encoding):
    """``(type, tf32)`` of a ``packed<...>`` placement; None for any other encoding."""
    if not isinstance(encoding, Placement) or encoding.where != "packed":
        return None
    if encoding.form == "tf32":
        return T.float32, True
    return T.dtype_from_ir_name(encoding.form), False


class _Planner:
    def __init__(self, fn: Function, debug: bool):
        self.debug = debug
        self.uses = count_uses(fn)
        self.in_store: set[int] = set()  # values computed lane by lane in the loop of the store using them
        self.read_in_store: set[int] = set()  # loads read in that loop
        self.packed: dict[int, tuple] = {}  # load result id -> (type, tf32) its buffer holds
        if not debug:  # (debug mode checks an op's lanes where it is defined: no chains into stores)
            self._find_store_chains(fn.body)
        self._find_packed_loads(fn.body)

    def _find_store_chains(self, region: Region) -> None:
        """Loads that a store can read in its own loop: block loads all of whose uses are in the
        stored value's computation (``_lane_chain``), with nothing between the load and the store
        that writes memory or synchronizes (the store's check decides at run time whether the bytes
        may overlap); and the values of those computations, which need no buffer."""
        pending: list[Operation] = []
        for op in region.ops:
            for inner in op.regions:
                self._find_store_chains(inner)
            if op.opcode == "load":
                result = op.results[0]
                if isinstance(result.type, T.block_type) and not op.attrs.get("volatile", False):
                    pending.append(op)
                continue
            if op.opcode == "store" and isinstance(op.operands[0].type, T.block_type):
                reached = self._lane_chain(op.operand("value"))
                self.in_store |= reached
                # a load broadcast into the stored block (a bias row under a tile) is read once into a
                # buffer, not again for every lane of the store that uses it
                lanes_stored = _numel(op.operands[0].type)
                self.read_in_store |= {load.results[0].id for load in pending if load.results[0].id in reached
                                       and _numel(load.results[0].type) == lanes_stored}
                pending = []
                continue
            if has_effects(op):
                pending = []

    def _find_packed_loads(self, region: Region) -> None:
        from . import dot

        for op in region.ops:
            for inner in op.regions:
                self._find_packed_loads(inner)
            if op.opcode != "dot":
                continue
            for name in ("a", "b"):
                operand = op.operand(name)
                load = operand.owner
                if load is None or load.opcode != "load" or self.uses.get(operand.id) != 1 or \
                        load.attrs.get("volatile", False) or operand.id in self.read_in_store:
                    continue
                form = dot.packed_form(op, operand.type.scalar)
                if form is not None:
                    self.packed[operand.id] = form

    def _lane_chain(self, value: Value) -> set[int]:
        """Ids of the values the stored ``value`` is computed from through lazily evaluated
        elementwise ops, every use of which is inside that computation (``value`` itself included):
        a lane of each is computed once, where that lane of ``value`` is, so none needs a buffer and
        a load among them can be read inside the store's loop (``x * x`` reads ``x`` once per lane)."""
        if self.uses.get(value.id, 0) != 1:  # also used elsewhere: computed (and buffered) where it is defined
            return set()
        operands: dict[int, list[int]] = {}  # id of a value in the computation -> its op's block operands
        stack = [value]
        seen = {value.id}
        while stack:
            v = stack.pop()
            op = v.owner
            if op is None or op.opcode not in lanes.LOWER or op.opcode == "philox":
                continue
            operands[v.id] = [o.id for o in op.operands if isinstance(o.type, T.block_type)]
            for operand in op.operands:
                if isinstance(operand.type, T.block_type) and operand.id not in seen:
                    seen.add(operand.id)
                    if operand.owner is not None and operand.owner.opcode != "load":
                        stack.append(operand)
        inside = {value.id}
        grown = True
        while grown:  # add the values all of whose uses are by values inside
            grown = False
            counts: dict[int, int] = {}
            for vid in inside:
                for operand in operands.get(vid, ()):
                    counts[operand] = counts.get(operand, 0) + 1
            for vid, count in counts.items():
                if vid not in inside and count == self.uses.get(vid, 0):
                    inside.add(vid)
                    grown = True
        return inside

    def _elementwise(self, op: Operation, result: Value) -> Placement:
        """A lazy value used twice that is not index arithmetic becomes a buffer (computed once)."""
        if result.id in self.in_store:
            return IN_STORE
        scalar = result.type.scalar
        index_like = not scalar.is_floating() and op.opcode != "libdevice"
        if index_like and op.opcode not in ("floordiv", "mod", "umulhi"):
            return LAZY
        return BUFFER if self.uses.get(result.id, 0) >= 2 else LAZY

    def placement(self, op: Operation, result: Value, rules) -> Placement:
        if op.opcode == "load":
            if result.id in self.read_in_store:
                return READ_IN_STORE
            form = self.packed.get(result.id)
            return Placement("packed", packed_text(form)) if form is not None else BUFFER
        if op.opcode in COPYING_OPCODES:  # cheap to compute again where read: never a buffer
            return LAZY
        if self.debug and checked_code(op) is not None:  # every lane computed (and checked) once, where defined
            return BUFFER
        if op.opcode not in rules and op.opcode in lanes.LOWER:
            return self._elementwise(op, result)
        return BUFFER


def place(fn: Function, rules, debug: bool = False) -> dict[int, int]:
    """Writes the placement of every block value of ``fn`` (``Value.encoding``); ``rules``: the code
    generator's rule table (an elementwise op with a rule of its own is not a lane expression);
    ``debug``: for the variant with debug mode's checks (``debug_checks.py``). Returns the use counts
    it was decided from."""
    planner = _Planner(fn, debug)

    def walk(region: Region) -> None:
        for arg in region.args:
            if isinstance(arg.type, T.block_type):
                arg.encoding = BUFFER  # a loop-carried block lives in the loop's slot
        for op in region.ops:
            for inner in op.regions:
                walk(inner)
            for result in op.results:
                if isinstance(result.type, T.block_type):
                    result.encoding = planner.placement(op, result, rules)

    walk(fn.body)
    return planner.uses


def loads_read_in_store(store: Operation, op_index: dict) -> list[Value]:
    """The ``read_in_store`` loads the value ``store`` writes is computed from, in program order."""
    found, stack, seen = [], [store.operand("value")], set()
    while stack:
        v = stack.pop()
        if v.id in seen or not isinstance(v.encoding, Placement):
            continue
        seen.add(v.id)
        if v.encoding == READ_IN_STORE:
            found.append(v)
        elif v.encoding == IN_STORE:
            stack.extend(v.owner.operands)
    return sorted(found, key=lambda v: op_index[id(v.owner)])
