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
from ..ir.ops import Function, Operation, Value
from ..semantics import Semantic
from .rewriting import expand_ops

# The op this pass rewrites, with what it becomes: a backend that runs the pass never sees it.
REMOVES = {"inline_asm": "the compiler's lower_inline_asm pass turns it into the tl ops that emulate its instruction"}


def _emulation(op: Operation) -> list[Value]:
    args = [tensor(v, v.type) for v in op.operands]
    dtypes = [r.type.scalar for r in op.results]
    try:
        result = emulate(op.attrs["asm"], op.attrs["constraints"], args, dtypes if len(dtypes) > 1 else dtypes[0],
                         op.attrs["pure"], op.attrs["pack"])
    except NotImplementedError as error:
        raise CompilationError(op.loc, str(error),
                               "inline asm beyond that table runs on the CUDA backend (CUDA tensors); on the "
                               "host, write the operation with tl functions") from None
    return [r.handle for r in (result if isinstance(result, tuple) else (result,))]


def lower_inline_asm(fn: Function) -> bool:
    """Rewrites every ``inline_asm`` of ``fn`` in place; returns whether anything changed."""
    builder = Builder()
    with Semantic(builder):
        return expand_ops(fn, tuple(REMOVES), _emulation, builder)
