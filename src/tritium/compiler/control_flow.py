"""Rewrites ``return`` inside ``if`` statements into structured control flow, before code generation.

A program that returns early must skip the rest of the kernel while other programs of its batch go
on, so an early return becomes two variables: ``return v`` sets ``__retval__ = v`` and
``__returned__ = True``, and every statement after one that may return runs under
``if not __returned__:``. When the condition is a constexpr the flag stays a constexpr and the
rewrite costs nothing; when it is a run-time value the flag becomes an i1 like any other variable.
"""
from __future__ import annotations

import ast
import copy

RETURNED = "__returned__"
RETVAL = "__retval__"


def _contains_return(statements) -> bool:
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return):
                return True
    return False


def _needs_rewrite(fn: ast.FunctionDef) -> bool:
    """True when some return sits inside an ``if`` (a plain trailing return needs nothing)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.If) and _contains_return(node.body + node.orelse):
            return True
    return False


def _name(id_: str, ctx, like: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ctx), like)


def _assign(target: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    node = ast.Assign(targets=[_name(target, ast.Store(), like)], value=value)
    return ast.copy_location(node, like)


def _lower_block(statements: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for i, stmt in enumerate(statements):
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.copy_location(ast.Constant(value=None), stmt)
            out.append(_assign(RETVAL, value, stmt))
            out.append(_assign(RETURNED, ast.copy_location(ast.Constant(value=True), stmt), stmt))
            return out  # the rest of this block is unreachable
        if isinstance(stmt, ast.If) and _contains_return(stmt.body + stmt.orelse):
            stmt = copy.copy(stmt)
            stmt.body = _lower_block(stmt.body)
            stmt.orelse = _lower_block(stmt.orelse)
            out.append(stmt)
            rest = statements[i + 1:]
            if rest:
                guard = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=_name(RETURNED, ast.Load(), rest[0])),
                                          rest[0])
                out.append(ast.copy_location(ast.If(test=guard, body=_lower_block(rest), orelse=[]), rest[0]))
            return out
        out.append(stmt)
    return out


def lower_early_returns(fn: ast.FunctionDef) -> ast.FunctionDef:
    """The function with returns inside ``if`` rewritten as described above (unchanged otherwise)."""
    if not _needs_rewrite(fn):
        return fn
    fn = copy.copy(fn)
    first = fn.body[0]
    prologue = [_assign(RETURNED, ast.copy_location(ast.Constant(value=False), first), first),
                _assign(RETVAL, ast.copy_location(ast.Constant(value=None), first), first)]
    last = fn.body[-1]
    epilogue = [ast.copy_location(ast.Return(value=_name(RETVAL, ast.Load(), last)), last)]
    fn.body = prologue + _lower_block(fn.body) + epilogue
    return fn
