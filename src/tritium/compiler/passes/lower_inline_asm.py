"""Rewrites ``inline_asm`` (``tl.inline_asm_elementwise``) into the tl operations that emulate its
PTX instruction, for backends that have no PTX assembler behind them (the interpreter, the CPU
backend); a GPU backend skips this pass and emits the asm itself.

The emulated instructions are the table of ``language/inline_asm.py``. Any other asm is a
``CompilationError`` at the call's line naming the instruction: it runs on the CUDA backend only.
The new ops carry the call's source location.
"""
from __future__ import annotations

from ...errors import CompilationError
from ...language.core import tensor
from ...language.inline_asm import emulate
from ..ir.builder import Builder
from ..ir.ops import Function, Operation, Region, Value
from ..semantics import Semantic


class _Rewriter:
    """Walks the function in program order, replacing each ``inline_asm`` by its emulation; later
    uses of its results take the emulation's."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.replacements: dict[int, Value] = {}

    def region(self, region: Region) -> bool:
        changed = False
        rewritten: list[Operation] = []
        for op in region.ops:
            op.operands = [self.replacements.get(v.id, v) for v in op.operands]
            for nested in op.regions:
                changed |= self.region(nested)
            if op.opcode != "inline_asm":
                rewritten.append(op)
                continue
            scratch = Region()
            self.builder.loc = op.loc
            with self.builder.insert_into(scratch):
                self.lower(op)
            rewritten.extend(scratch.ops)
            changed = True
        region.ops = rewritten
        return changed

    def lower(self, op: Operation) -> None:
        args = [tensor(v, v.type) for v in op.operands]
        dtypes = [r.type.scalar for r in op.results]
        try:
            result = emulate(op.attrs["asm"], op.attrs["constraints"], args,
                             dtypes if len(dtypes) > 1 else dtypes[0], op.attrs["pure"], op.attrs["pack"])
        except NotImplementedError as error:
            raise CompilationError(op.loc, str(error),
                                   "inline asm beyond that table runs on the CUDA backend (CUDA tensors); on the "
                                   "host, write the operation with tl functions") from None
        results = result if isinstance(result, tuple) else (result,)
        for old, new in zip(op.results, results):
            self.replacements[old.id] = new.handle


def lower_inline_asm(fn: Function) -> bool:
    """Rewrites every ``inline_asm`` of ``fn`` in place; returns whether anything changed."""
    builder = Builder()
    with Semantic(builder):
        return _Rewriter(builder).region(fn.body)
