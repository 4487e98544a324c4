"""The lowering skeleton the compiled backends share: one walker over the tile IR, one table of rules.

A backend's code generator is a ``Lowering``: a context (its builder, where each value lives, the
module being built) plus rules. A rule is a function ``lower_<opcode>(ctx, op)``, one signature for
every opcode; a backend writes its rules as methods of mixin classes named for their concern
(memory, control flow, cross-lane ops, dot) and composes them into one class, whose ``rules`` table
this module builds from the method names when the class is created. A ``lower_<name>`` whose name is
not an opcode of the IR spec is a helper, not a rule. Elementwise opcodes without a rule of their own
go to ``lower_lanes`` with the lane rules of ``lane_rules`` (``backends/llvm/scalar.py``, shared).

The walker (``lower_region``) lowers a region's ops in order and returns its terminator for the rule
that owns the region (``if``, ``for``, ``while``, ``reduce``...) to read; it keeps ``current``, the op
being lowered, so that an error raised anywhere inside a rule names the op and its kernel line.

Every op of the kernel has an index, the position of the op in a pre-order walk of the function
(``op_table``): run-time error records and prints name ops by it. It is a function of the IR alone,
so a launcher that loads a compiled object from the disk cache rebuilds the table without lowering.
"""
from __future__ import annotations

from typing import Callable, ClassVar, Optional

from ...compiler.ir.ops import Function, Operation, Region
from ...compiler.ir.spec import SPEC, TERMINATORS
from ...errors import NotLoweredError, TritonError, internal_error
from . import scalar


class UnsupportedOp(Exception):
    """An op a backend cannot lower (yet); ``lower_kernel`` turns it into a NotLoweredError at its line."""


class LowerAgain(Exception):
    """A rule found that a choice made before lowering does not hold for this kernel: ``lower_kernel``
    lets it through to the backend, which lowers the kernel again choosing otherwise."""


def op_table(fn: Function) -> list[Operation]:
    """Every op of ``fn`` in pre-order (an op before the ops of its regions): an op's index in this
    list is the number error records and prints carry."""
    return list(fn.walk())


def rules_of(cls) -> dict[str, Callable]:
    """The ``lower_<opcode>`` methods of ``cls`` (and its bases), keyed by opcode."""
    rules = {}
    for name in dir(cls):
        if name.startswith("lower_") and name[len("lower_"):] in SPEC:
            rules[name[len("lower_"):]] = getattr(cls, name)
    return rules


def lowered_opcodes(generator_class) -> frozenset[str]:
    """The opcodes a code generator class lowers: its rules, its lane rules and the terminators (read
    by the rule of the op that owns their region)."""
    return frozenset(set(generator_class.rules) | set(generator_class.lane_rules) | TERMINATORS)


class Lowering:
    """The walker and the rule table; a backend's code generator derives from it (see the module)."""

    rules: ClassVar[dict[str, Callable]] = {}
    lane_rules: ClassVar[dict[str, Callable]] = scalar.LOWER

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.rules = rules_of(cls)

    def __init__(self, fn: Function):
        self.fn = fn
        self.ops: list[Operation] = op_table(fn)
        self.op_index: dict[int, int] = {id(op): i for i, op in enumerate(self.ops)}
        self.current: Optional[Operation] = None

    def lower_region(self, region: Region) -> Optional[Operation]:
        """Lowers the ops of ``region`` (its arguments already bound) up to its terminator, which is
        returned, not lowered (None for a region without one)."""
        for op in region.ops:
            if op.opcode in TERMINATORS:
                return op
            self.current = op
            self.lower_op(op)
        return None

    def lower_op(self, op: Operation) -> None:
        rule = self.rules.get(op.opcode)
        if rule is not None:
            rule(self, op)
        elif op.opcode in self.lane_rules:
            self.lower_lanes(op)
        else:
            raise UnsupportedOp(f"the {op.opcode} op")

    def lower_lanes(self, op: Operation) -> None:
        """An elementwise op lowered through its lane rule; each backend says where the lanes live."""
        raise NotImplementedError(f"lanes of {op.opcode}")


def lower_kernel(generator: Lowering, backend: str, remedy: str):
    """``generator.build()``, with what goes wrong turned into the user's errors: an op the backend
    cannot lower is a NotLoweredError at the op's line (``remedy`` says what the user can do), any
    other exception is an internal error naming the op."""
    fn = generator.fn
    try:
        return generator.build()
    except (UnsupportedOp, NotImplementedError) as error:
        op = generator.current
        raise NotLoweredError(getattr(op, "loc", None),
                              f"the {backend} backend cannot compile {error} in kernel '{fn.name}' yet",
                              remedy) from None
    except (TritonError, LowerAgain):
        raise
    except Exception as error:  # not the kernel's mistake: ours
        op = generator.current
        raise internal_error(error, kernel=fn.name, loc=getattr(op, "loc", None),
                             opcode=getattr(op, "opcode", ""), where=f"the {backend} backend") from error
