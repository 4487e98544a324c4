"""The tile IR's data structures: values, operations, regions and functions.

A function is a region of operations in SSA form. Control flow is structured: ``if``,
``for`` and ``while`` own regions that end in ``yield`` (or ``condition``). Every operation
remembers the kernel source location it came from.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from .spec import SPEC, TERMINATOR


@dataclass(frozen=True)
class Location:
    """A position in the user's kernel source."""

    file: str
    line: int
    col: int = 0
    function: str = ""
    # Where the @jit helper holding this location was called from (its own Location), or None.
    inlined_at: Optional[Location] = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def call_chain(self) -> list[Location]:
        """This location, then each call site it was inlined at, innermost first."""
        chain: list[Location] = []
        loc: Optional[Location] = self
        while loc is not None:
            chain.append(loc)
            loc = loc.inlined_at
        return chain


class Value:
    """An SSA value: the result of an operation, or an argument of a region.

    ``type`` is what the tile IR knows: a scalar, pointer or block type. ``encoding`` is the slot a
    backend fills with how it places the value (a GPU backend's distributed layout, a CPU
    backend's vector-register or stack placement); it is None in the tile IR, which the printer
    and parser describe, and never read by the frontend or the target-independent passes.
    """

    __slots__ = ("encoding", "id", "owner", "type")
    _counter = itertools.count()

    def __init__(self, type, owner: Optional[Operation] = None):
        self.type = type
        self.id = next(Value._counter)
        self.owner = owner
        self.encoding = None

    def __repr__(self) -> str:
        return f"Value(#{self.id}: {getattr(self.type, 'ir_name', self.type)})"




_TERMINATORS = frozenset(opcode for opcode, entry in SPEC.items() if TERMINATOR in entry.traits)


class Operation:
    """One IR instruction. ``operand_names`` gives each operand its slot name from the IR spec
    (``op.operand("mask")`` is the mask of a load, or None when it has none)."""

    __slots__ = ("attrs", "loc", "opcode", "operand_names", "operands", "regions", "results")

    def __init__(self, opcode: str, operands, result_types, attrs=None, regions=(), loc: Optional[Location] = None,
                 operand_names: Optional[tuple[str, ...]] = None):
        self.opcode = opcode
        self.operands: list[Value] = list(operands)
        if operand_names is None:
            spec = SPEC.get(opcode)
            operand_names = spec.operand_names(len(self.operands)) if spec is not None else ()
        self.operand_names: tuple[str, ...] = tuple(operand_names)
        self.results: list[Value] = [Value(t, self) for t in result_types]
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.regions: list[Region] = list(regions)
        self.loc = loc

    def operand(self, name: str) -> Optional[Value]:
        """The operand in slot ``name`` (the first, for a variadic slot), or None when absent."""
        try:
            return self.operands[self.operand_names.index(name)]
        except ValueError:
            return None

    def operand_index(self, name: str) -> Optional[int]:
        try:
            return self.operand_names.index(name)
        except ValueError:
            return None

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.opcode} has {len(self.results)} results"
        return self.results[0]

    def __repr__(self) -> str:
        return f"Operation({self.opcode}, loc={self.loc})"


class Region:
    """A list of operations with arguments (loop induction variables, carried values)."""

    __slots__ = ("args", "ops")

    def __init__(self, arg_types=()):
        self.args: list[Value] = [Value(t) for t in arg_types]
        self.ops: list[Operation] = []

    @property
    def terminator(self) -> Optional[Operation]:
        if self.ops and self.ops[-1].opcode in _TERMINATORS:
            return self.ops[-1]
        return None

    def walk(self) -> Iterator[Operation]:
        """Every operation in this region and its nested regions, in program order."""
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


@dataclass
class Function:
    """A compiled kernel: its arguments and its body."""

    name: str
    arg_names: list[str]
    body: Region
    loc: Optional[Location] = None
    constants: dict[str, Any] = field(default_factory=dict)
    # One dict per argument: facts the specialization proved about it, which compiled backends
    # use ("divisibility": 16 for an integer divisible by 16 or a 16-byte aligned pointer).
    arg_attrs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()

    def copy(self) -> Function:
        """A function of new values and operations that computes the same (types, attributes,
        locations and encodings shared or copied): what a backend's own passes rewrite, leaving this
        one to the others."""
        mapping: dict[int, Value] = {}

        def value(old: Value, owner: Optional[Operation] = None) -> Value:
            new = Value(old.type, owner)
            new.encoding = old.encoding
            mapping[old.id] = new
            return new

        def region(old: Region) -> Region:
            new = Region()
            new.args = [value(a) for a in old.args]
            new.ops = [operation(op) for op in old.ops]
            return new

        def operation(old: Operation) -> Operation:
            new = Operation(old.opcode, [mapping.get(v.id, v) for v in old.operands], [], dict(old.attrs), (),
                            old.loc, old.operand_names)
            new.regions = [region(r) for r in old.regions]
            new.results = [value(r, new) for r in old.results]
            return new

        return Function(self.name, list(self.arg_names), region(self.body), self.loc, dict(self.constants),
                        [dict(a) for a in self.arg_attrs])

    def __str__(self) -> str:
        from .printer import print_function

        return print_function(self)
