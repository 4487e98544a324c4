"""Checks the IR's invariants: values defined before use, regions terminated, operand types agree.

A failure here is a bug in tritium, not in the user's kernel: it raises ``IRVerificationError``
with the offending operation printed, so the frontend or a pass that broke the IR is easy to find.
"""
from __future__ import annotations

from . import types as T
from .ops import Function, Operation, Region


class IRVerificationError(AssertionError):
    pass


_ELEMENTWISE_SAME_TYPE = {"add", "sub", "mul", "div", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
                          "minimum", "maximum", "umulhi"}


def _fail(op: Operation, message: str):
    raise IRVerificationError(f"invalid IR at {op.loc}: {op.opcode}: {message}")


def _check_op(op: Operation) -> None:
    types = [v.type for v in op.operands]
    if op.opcode in _ELEMENTWISE_SAME_TYPE:
        if len(set(types)) != 1 or op.result.type != types[0]:
            _fail(op, f"operand and result types differ: {types} -> {op.result.type}")
    elif op.opcode == "cmp":
        if types[0] != types[1] or T.shape_of(op.result.type) != T.shape_of(types[0]):
            _fail(op, f"comparison of {types[0]} and {types[1]}")
    elif op.opcode == "select":
        if types[1] != types[2] or T.shape_of(types[0]) != T.shape_of(types[1]):
            _fail(op, f"select types {types}")
    elif op.opcode == "load":
        ptr = types[0]
        if not ptr.scalar.is_ptr() or op.result.type != T.with_element(ptr, ptr.scalar.element_ty):
            _fail(op, f"load through {ptr} gives {op.result.type}")
    elif op.opcode == "store":
        ptr, value = types[0], types[1]
        if value != T.with_element(ptr, ptr.scalar.element_ty):
            _fail(op, f"store of {value} through {ptr}")
    elif op.opcode == "if":
        for region in op.regions:
            term = region.terminator
            if term is None or [v.type for v in term.operands] != [r.type for r in op.results]:
                _fail(op, "a branch does not yield the if's result types")
    elif op.opcode == "for":
        body = op.regions[0]
        term = body.terminator
        if term is None or [v.type for v in term.operands] != [r.type for r in op.results]:
            _fail(op, "the body does not yield the loop's carried types")


def _verify_region(region: Region, defined: set[int]) -> None:
    defined = set(defined)
    defined.update(a.id for a in region.args)
    for op in region.ops:
        for v in op.operands:
            if v.id not in defined:
                _fail(op, f"uses value #{v.id} before it is defined")
        _check_op(op)
        for nested in op.regions:
            _verify_region(nested, defined)
        defined.update(r.id for r in op.results)


def verify(fn: Function) -> None:
    _verify_region(fn.body, set())
