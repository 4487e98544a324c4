"""Rewrites ``return`` inside ``if``s and loops, ``break`` and ``continue`` into structured control
flow with flag variables, before code generation.

A program that returns early must skip the rest of the kernel while other programs of its batch go
on, so an early return becomes two variables: ``return v`` sets ``__retval__ = v`` and
``__returned__ = True``, and every statement after one that may return runs under
``if not __returned__:``. When the condition is a constexpr the flag stays a constexpr and the
rewrite costs nothing; when it is a run-time value the flag becomes an i1 like any other variable.

Loops work the same way. ``continue`` sets the loop's ``__continueN__`` (reset at the top of each
iteration), ``break`` sets ``__breakN__`` (set to False before the loop); the rest of the
iteration runs under ``if not (flags that may be set):``. A loop that may break or return must
also stop iterating: a ``while`` gets the condition ``(test) if not (__breakN__ or __returned__)
else False``; a ``for`` is marked with the flags (attribute ``EXIT_FLAGS``), and the frontend makes
a run-time one a while loop over a counter, and skips the remaining iterations of an unrolled one.
Triton rejects these statements; here each program leaves its loop at its own iteration.
"""
from __future__ import annotations

import ast
import copy
from typing import Optional

RETURNED = "__returned__"
RETVAL = "__retval__"
EXIT_FLAGS = "tritium_exit_flags"  # on an ast.For: the flags that end it (see above)
# on an ast.If that guards the rest of a block with `if not __returned__:` alone: the programs that
# skip it have returned and read none of the variables it assigns (see the frontend's _join)
SKIPPED_BY_RETURN = "tritium_skipped_by_return"


def _contains_return(statements) -> bool:
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return):
                return True
    return False


def _own_exits(statements, kind) -> bool:
    """True when a ``break``/``continue`` (``kind``) in these statements belongs to the loop around them
    (not to a loop nested inside them)."""
    pending = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, kind):
            return True
        if isinstance(node, (ast.For, ast.While)):
            pending.extend(node.orelse)  # a loop's own body has its own breaks
            continue
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return False


def _contains_exit(statements) -> bool:
    return any(isinstance(node, (ast.Break, ast.Continue)) for stmt in statements for node in ast.walk(stmt))


def _needs_rewrite(fn: ast.FunctionDef) -> bool:
    """True when some return sits inside an ``if`` or a loop, or a loop has break/continue
    (a plain trailing return needs nothing)."""
    for node in ast.walk(fn):
        if isinstance(node, (ast.If, ast.For, ast.While)) and _contains_return(node.body + node.orelse):
            return True
    return _contains_exit(fn.body)


def _name(id_: str, ctx, like: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ctx), like)


def _assign(target: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    node = ast.Assign(targets=[_name(target, ast.Store(), like)], value=value)
    return ast.copy_location(node, like)


def _constant(value, like: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=value), like)


def _none_set(flags: list[str], like: ast.AST) -> ast.expr:
    """``not (flag or flag ...)``."""
    names = [_name(f, ast.Load(), like) for f in flags]
    any_set = names[0] if len(names) == 1 else ast.copy_location(ast.BoolOp(op=ast.Or(), values=names), like)
    return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=any_set), like)


class _Loop:
    """The flags of the loop whose body is being rewritten."""

    def __init__(self, brk: Optional[str], cont: Optional[str]):
        self.brk = brk
        self.cont = cont


class _Rewriter:
    def __init__(self):
        self.loops = 0

    def block(self, statements: list[ast.stmt], loop: Optional[_Loop]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, stmt in enumerate(statements):
            if isinstance(stmt, ast.Return):
                value = stmt.value if stmt.value is not None else _constant(None, stmt)
                out.append(_assign(RETVAL, value, stmt))
                out.append(_assign(RETURNED, _constant(True, stmt), stmt))
                return out  # the rest of this block is unreachable
            if isinstance(stmt, (ast.Break, ast.Continue)) and loop is not None:
                out.append(_assign(loop.brk if isinstance(stmt, ast.Break) else loop.cont, _constant(True, stmt), stmt))
                return out
            flags: list[str] = []
            if isinstance(stmt, ast.If):
                new = copy.copy(stmt)
                new.body = self.block(stmt.body, loop)
                new.orelse = self.block(stmt.orelse, loop)
                out.append(new)
                if _contains_return(stmt.body + stmt.orelse):
                    flags.append(RETURNED)
                if loop is not None and _own_exits(stmt.body + stmt.orelse, ast.Break):
                    flags.append(loop.brk)
                if loop is not None and _own_exits(stmt.body + stmt.orelse, ast.Continue):
                    flags.append(loop.cont)
            elif isinstance(stmt, (ast.For, ast.While)):
                out.extend(self.loop(stmt))
                if _contains_return(stmt.body):
                    flags.append(RETURNED)
            else:
                out.append(stmt)
            rest = statements[i + 1:]
            if flags and rest:
                guard = ast.If(test=_none_set(flags, rest[0]), body=self.block(rest, loop), orelse=[])
                if flags == [RETURNED]:
                    setattr(guard, SKIPPED_BY_RETURN, True)
                out.append(ast.copy_location(guard, rest[0]))
                return out
        return out

    def loop(self, stmt) -> list[ast.stmt]:
        """The loop with its body rewritten, preceded by the initialisation of its break flag."""
        self.loops += 1
        brk = f"__break{self.loops}__" if _own_exits(stmt.body, ast.Break) else None
        cont = f"__continue{self.loops}__" if _own_exits(stmt.body, ast.Continue) else None
        returns = _contains_return(stmt.body)
        new = copy.copy(stmt)
        body = self.block(stmt.body, _Loop(brk, cont))
        if cont:
            body.insert(0, _assign(cont, _constant(False, stmt), stmt))
        new.body = body
        exits = ([brk] if brk else []) + ([RETURNED] if returns else [])
        if exits and isinstance(stmt, ast.While):
            # evaluate the condition only while no exit flag is set: `(test) if not (flags) else False`
            new.test = ast.copy_location(
                ast.IfExp(test=_none_set(exits, stmt.test), body=stmt.test, orelse=_constant(False, stmt.test)),
                stmt.test)
        elif exits:
            setattr(new, EXIT_FLAGS, tuple(exits))
        return ([_assign(brk, _constant(False, stmt), stmt)] if brk else []) + [new]


def lower_early_returns(fn: ast.FunctionDef) -> ast.FunctionDef:
    """The function with returns inside ``if``s and loops, ``break`` and ``continue`` rewritten as
    described above (unchanged when there are none)."""
    if not _needs_rewrite(fn):
        return fn
    fn = copy.copy(fn)
    body = _Rewriter().block(fn.body, None)
    if _contains_return(fn.body):
        first, last = fn.body[0], fn.body[-1]
        prologue = [_assign(RETURNED, _constant(False, first), first), _assign(RETVAL, _constant(None, first), first)]
        epilogue = [ast.copy_location(ast.Return(value=_name(RETVAL, ast.Load(), last)), last)]
        body = prologue + body + epilogue
    fn.body = body
    return fn
