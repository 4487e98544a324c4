"""The tile IR's data structures: values, operations, regions and functions.

A function is a region of operations in SSA form. Control flow is structured: ``if``,
``for`` and ``while`` own regions that end in ``yield`` (or ``condition``). Every operation
remembers the kernel source location it came from.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional


@dataclass(frozen=True)
class Location:
    """A position in the user's kernel source."""

    file: str
    line: int
    col: int = 0
    function: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


class Value:
    """An SSA value: the result of an operation, or an argument of a region."""

    __slots__ = ("type", "id", "owner")
    _counter = itertools.count()

    def __init__(self, type, owner: Optional["Operation"] = None):
        self.type = type
        self.id = next(Value._counter)
        self.owner = owner

    def __repr__(self) -> str:
        return f"Value(#{self.id}: {getattr(self.type, 'ir_name', self.type)})"


# Opcodes whose execution matters even when their results are unused.
SIDE_EFFECTS = frozenset({"store", "atomic_rmw", "atomic_cas", "print", "assert", "barrier", "hint", "return"})
# Opcodes that end a region.
TERMINATORS = frozenset({"yield", "condition"})
# Opcodes with regions whose bodies are ordinary code executed in place.
CONTROL_FLOW = frozenset({"if", "for", "while"})


class Operation:
    """One IR instruction."""

    __slots__ = ("opcode", "operands", "results", "attrs", "regions", "loc")

    def __init__(self, opcode: str, operands, result_types, attrs=None, regions=(), loc: Optional[Location] = None):
        self.opcode = opcode
        self.operands: list[Value] = list(operands)
        self.results: list[Value] = [Value(t, self) for t in result_types]
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.regions: list[Region] = list(regions)
        self.loc = loc

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.opcode} has {len(self.results)} results"
        return self.results[0]

    @property
    def has_side_effects(self) -> bool:
        if self.opcode in SIDE_EFFECTS:
            return True
        return any(op.has_side_effects for region in self.regions for op in region.walk())

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
        if self.ops and self.ops[-1].opcode in TERMINATORS:
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

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()

    def __str__(self) -> str:
        from .printer import print_function

        return print_function(self)
